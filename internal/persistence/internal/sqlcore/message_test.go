package sqlcore

import (
	"strings"
	"testing"
)

// TestMessageQueriesSelectMessageColumns: both reads select MessageColumns.
func TestMessageQueriesSelectMessageColumns(t *testing.T) {
	for _, q := range []string{MessagesQuery, ActiveMessagesQuery} {
		if !strings.HasPrefix(q, "SELECT "+MessageColumns+" FROM messages ") {
			t.Errorf("%q does not select MessageColumns", q)
		}
	}
}
