package sqlcore

import (
	"slices"
	"testing"
)

func TestParseTextAt(t *testing.T) {
	for _, c := range []struct {
		at   string
		want []int64
	}{
		{"7", []int64{7}},
		{textAt("", 81734), []int64{81734}},
		{textAt(textAt("", 5), 9), []int64{5, 9}},
	} {
		if got, err := parseTextAt(c.at); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("parseTextAt(%q) = %v, %v; want %v", c.at, got, err, c.want)
		}
	}
	for _, bad := range []string{"", ",", "1,", "0", "-3", "a", "1;2", "99999999999999999999"} {
		if got, err := parseTextAt(bad); err == nil {
			t.Errorf("parseTextAt(%q) = %v, want an error", bad, got)
		}
	}
}

// TestTextAtOffset: rows whose records are numbered as they are get one
// offset; a gap (another session's insert between, on PostgreSQL) is seen.
func TestTextAtOffset(t *testing.T) {
	rows := []MessageRow{{Seq: 10, Ref: true}, {Seq: 11}, {Seq: 12, Ref: true}}
	ids := []int64{100, 101, 102}
	refIDs, offset, uniform := textAtOffset(rows, ids, []int64{500, 501, 502})
	if !slices.Equal(refIDs, []int64{100, 102}) || offset != 490 || !uniform {
		t.Errorf("consecutive: %v, %d, %v", refIDs, offset, uniform)
	}
	if _, _, uniform := textAtOffset(rows, ids, []int64{500, 501, 507}); uniform {
		t.Error("a gap between the records was not seen")
	}
	if refIDs, _, _ := textAtOffset(rows[1:2], ids[1:2], []int64{501}); len(refIDs) != 0 {
		t.Errorf("no row refers to its record, got %v", refIDs)
	}
}
