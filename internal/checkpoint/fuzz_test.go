package checkpoint

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRawDiff(t *testing.T) {
	oid1, oid2 := strings.Repeat("a", 40), strings.Repeat("b", 40)
	zero := strings.Repeat("0", 40)
	out := ":100644 100755 " + oid1 + " " + oid2 + " M\x00dir/x y.sh\x00" +
		":000000 100644 " + zero + " " + oid2 + " A\x00new\nline\x00" +
		":120000 000000 " + oid1 + " " + zero + " D\x00link\x00"
	got, err := parseRawDiff([]byte(out))
	if err != nil || len(got) != 3 {
		t.Fatalf("parseRawDiff = %+v, %v", got, err)
	}
	if got[0].path != "dir/x y.sh" || got[0].old.mode != 0o100644 || got[0].new.mode != 0o100755 || got[0].new.oid != oid2 {
		t.Errorf("modified: %+v", got[0])
	}
	if got[1].path != "new\nline" || got[1].old.exists() || !got[1].new.exists() {
		t.Errorf("added: %+v", got[1])
	}
	if got[2].old.mode != 0o120000 || got[2].new.exists() {
		t.Errorf("deleted link: %+v", got[2])
	}
	for _, bad := range []string{":100644 100644 x y M\x00p\x00", ":100644\x00p\x00", ":100644 100644 " + oid1 + " " + oid2 + " M\x00", "garbage"} {
		if _, err := parseRawDiff([]byte(bad)); err == nil {
			t.Errorf("parseRawDiff(%q): no error", bad)
		}
	}
}

// FuzzParseRawDiff: diff-tree's output names paths of an untrusted work
// tree; whatever it holds, the parser returns an error or changes whose
// paths are non-empty and hold no NUL.
func FuzzParseRawDiff(f *testing.F) {
	oid := strings.Repeat("a", 40)
	f.Add([]byte(":100644 100644 " + oid + " " + oid + " M\x00p\x00"))
	f.Add([]byte(":000000 120000 " + strings.Repeat("0", 40) + " " + oid + " A\x00\x1b[2J\xff\xfe\x00"))
	f.Add([]byte(":100644 100644 " + oid + " " + oid + " M\x00" + strings.Repeat("\x01", 1<<16) + "\x00"))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseRawDiff(b)
		if err != nil {
			return
		}
		for _, c := range got {
			if c.path == "" || strings.IndexByte(c.path, 0) >= 0 {
				t.Fatalf("path %q", c.path)
			}
			if c.old.exists() && c.old.oid == "" || c.new.exists() && c.new.oid == "" {
				t.Fatalf("entry without an object: %+v", c)
			}
		}
	})
}

// FuzzUnifiedDiff: a skipped file's diff of any two contents (a
// workspace's bytes) is bounded, and applying its lines gives back both
// sides.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\nd"))
	f.Add([]byte("\x1b]52;c;AAAA\x07\n"), []byte("\xff\xfe"))
	f.Add([]byte(strings.Repeat("x\n", 3000)), []byte("y\n"))
	f.Add([]byte(""), []byte("only\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		d := unifiedDiff("f", a, b, true, true)
		if len(d) > 8*(len(a)+len(b))+200 {
			t.Fatalf("diff of %d and %d bytes is %d bytes", len(a), len(b), len(d))
		}
		if !strings.HasPrefix(d, "--- ") {
			return // said to differ, not shown
		}
		var from, to bytes.Buffer
		for _, l := range lines([]byte(d))[2:] {
			switch {
			case strings.HasPrefix(l, "@@"), strings.HasPrefix(l, "\\ No newline"):
			case l[0] == ' ':
				from.WriteString(l[1:])
				to.WriteString(l[1:])
			case l[0] == '-':
				from.WriteString(l[1:])
			case l[0] == '+':
				to.WriteString(l[1:])
			}
		}
		// Hunks leave out unchanged runs: each side's lines appear in it in order.
		if !subsequence(lines(a), lines(from.Bytes())) || !subsequence(lines(b), lines(to.Bytes())) {
			t.Fatalf("diff does not match its sides:\n%s", d)
		}
	})
}

// subsequence reports whether sub's lines (newline-terminated except where
// a side lacked one) appear in all in order.
func subsequence(all, sub []string) bool {
	i := 0
	for _, s := range sub {
		s = strings.TrimSuffix(s, "\n")
		for i < len(all) && strings.TrimSuffix(all[i], "\n") != s {
			i++
		}
		if i == len(all) {
			return false
		}
		i++
	}
	return true
}
