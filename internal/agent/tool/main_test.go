package tool

import (
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
)

// TestMain removes the test MCP server fixture.BuildBinary builds.
func TestMain(m *testing.M) { fixture.Main(m) }
