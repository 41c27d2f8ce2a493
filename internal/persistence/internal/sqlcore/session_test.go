package sqlcore

import (
	"errors"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		at int64
		id string
	}{{0, "a"}, {-5, "b"}, {1 << 62, "with:colons:and/ünicode"}} {
		at, id, err := DecodeCursor(EncodeCursor(c.at, c.id))
		if err != nil || at != c.at || id != c.id {
			t.Errorf("decode(encode(%d, %q)) = %d, %q, %v", c.at, c.id, at, id, err)
		}
	}
	for _, bad := range []string{"", "@@", "MQ", "MjoxOmE", "MTp4OmE", "MToxOg"} {
		if _, _, err := DecodeCursor(bad); !errors.Is(err, persistence.ErrInvalidCursor) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrInvalidCursor", bad, err)
		}
	}
}

func TestRewrite(t *testing.T) {
	f := Fragments{Later: "GREATEST(updated_at, ?)", Active: "is_active"}
	got := Rewrite(`UPDATE m SET a = ?, u = {later} WHERE {active} AND id = ?`, f, true)
	want := `UPDATE m SET a = $1, u = GREATEST(updated_at, $2) WHERE is_active AND id = $3`
	if got != want {
		t.Errorf("Rewrite = %q, want %q", got, want)
	}
	if got := Rewrite(`SELECT ? {active}`, f, false); got != `SELECT ? is_active` {
		t.Errorf("Rewrite unnumbered = %q", got)
	}
}
