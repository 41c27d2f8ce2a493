package agent

import (
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
)

// testDay is the day every agent of these tests lives in: the system
// prompt carries the date, and its length (a weekday's name) moves the
// prompt's token count, so no test may depend on the day it runs.
var testDay = time.Date(2026, time.March, 4, 10, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	wallClock = func() time.Time { return testDay }
	fixture.Main(m)
}
