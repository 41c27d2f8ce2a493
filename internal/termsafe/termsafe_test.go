package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapes are the ways text can act on a terminal instead of showing.
var escapes = []string{
	"touch PWNED # \x1b[2K\r? git status",       // erase the line, return, draw a fake question
	"rm -rf ~ \x1b[1A\x1b[2K? git status",       // cursor up
	"\x1b]52;c;cm0gLXJmIH4K\x07",                // OSC 52: write the clipboard
	"\x1b]0;innocent title\x1b\\",               // OSC 0: window title, ST-terminated
	"\x1b[2J\x1b[H",                             // clear the screen, home
	"\x1bP1$r0m\x1b\\",                          // DCS
	"\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\", // APC, PM, SOS
	"\u009b2J\u009d0;t\u0007\u0090q\u009c",      // C1 CSI, OSC, DCS, ST (UTF-8 encoded)
	"\x9b2J\x9d0;t\x07",                         // raw 8-bit C1 bytes: not UTF-8
	"safe\u202egnp.exe",                         // right-to-left override
	"\u2066a\u2067b\u2068c\u2069\u202a\u202b\u202c\u202d\u200e\u200f\u061c",
	"tag\U000E0041\U000E0042 zero\u200bwidth \ufeffbom",
	"bell\x07 backspace\x08 del\x7f nul\x00 vt\x0b ff\x0c so\x0e",
	"\xff\xfe invalid \xc3\x28 \xe2\x82",
	"crlf\r\nline\rover",
}

func TestText(t *testing.T) {
	cases := []struct{ in, text, line string }{
		{"plain text\n\twith a tab\n", "plain text\n\twith a tab\n", "plain text^J^Iwith a tab^J"},
		{"touch PWNED # \x1b[2K\r? git status", "touch PWNED # ^[[2K^M? git status", "touch PWNED # ^[[2K^M? git status"},
		{"\x1b]52;c;aGk=\x07", "^[]52;c;aGk=^G", "^[]52;c;aGk=^G"},
		{"a\r\nb", "a\nb", "a^M^Jb"},
		{"\u009b2J", "<U+009B>2J", "<U+009B>2J"},
		{"x\x9by", "x<0x9B>y", "x<0x9B>y"},
		{"safe\u202egnp.exe", "safe<U+202E>gnp.exe", "safe<U+202E>gnp.exe"},
		{"\u200e\u200f\u2066\u2069", "<U+200E><U+200F><U+2066><U+2069>", "<U+200E><U+200F><U+2066><U+2069>"},
		{"del\x7f nul\x00", "del^? nul^@", "del^? nul^@"},
		{"café 👨\u200d👩\u200d👧 ✓", "café 👨\u200d👩\u200d👧 ✓", "café 👨\u200d👩\u200d👧 ✓"},
		{"\U000E0041", "<U+E0041>", "<U+E0041>"},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
	}
	for _, s := range escapes {
		checkSafe(t, s)
	}
}

func TestJSON(t *testing.T) {
	for _, s := range append(escapes, "plain", "\U0001F600 emoji", "\u2028\u2029") {
		checkJSON(t, s)
	}
	b, _ := json.Marshal("a\u202eb\x7f\U000E0041")
	if got, want := string(JSON(b)), `"a\u202eb\u007f\udb40\udc41"`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

// checkSafe: what Text and Line return has no control byte but the
// allowed ones, no DEL, no C1, no invisible format character; is valid
// UTF-8; is unchanged by a second pass; and text with nothing unsafe
// comes back as it was.
func checkSafe(t *testing.T, s string) {
	t.Helper()
	for _, multiline := range []bool{true, false} {
		out := clean(s, multiline)
		if !utf8.ValidString(out) {
			t.Fatalf("clean(%q, %v) is not UTF-8: %q", s, multiline, out)
		}
		for _, r := range out {
			if (r == '\n' || r == '\t') && multiline {
				continue
			}
			if unsafeRune(r) {
				t.Fatalf("clean(%q, %v) keeps %U: %q", s, multiline, r, out)
			}
		}
		// An invalid byte is shown as its value, not replaced.
		if strings.ContainsRune(out, utf8.RuneError) && !strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("clean(%q, %v) replaced bytes with U+FFFD: %q", s, multiline, out)
		}
		if again := clean(out, multiline); again != out {
			t.Fatalf("clean is not idempotent on %q: %q then %q", s, out, again)
		}
		if firstUnsafe(s, multiline) == len(s) && out != s {
			t.Fatalf("clean(%q, %v) changed safe text: %q", s, multiline, out)
		}
	}
}

// checkJSON: JSON keeps the value and leaves no unsafe rune in the bytes.
func checkJSON(t *testing.T, s string) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(b)
	var back, want string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("JSON(%s) is not JSON: %v: %s", b, err, out)
	}
	_ = json.Unmarshal(b, &want)
	if back != want {
		t.Fatalf("JSON changed the value: %q became %q", want, back)
	}
	for _, r := range string(out) {
		if unsafeRune(r) {
			t.Fatalf("JSON(%s) keeps %U", b, r)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range escapes {
		f.Add(s)
	}
	f.Add(strings.Repeat("\x1b[2K\u202e\xff", 1<<16))
	f.Add(strings.Repeat("long line without controls ", 1<<15))
	f.Fuzz(func(t *testing.T, s string) {
		checkSafe(t, s)
		checkJSON(t, s)
	})
}

// BenchmarkTextPlain: the common case, text with nothing to change,
// costs a scan and no allocation.
func BenchmarkTextPlain(b *testing.B) {
	s := strings.Repeat("The answer streams to stdout, tool calls go to stderr. ", 100)
	b.ReportAllocs()
	for b.Loop() {
		_ = Text(s)
	}
}

// BenchmarkTextHostile: text that is mostly escapes stays linear.
func BenchmarkTextHostile(b *testing.B) {
	s := strings.Repeat("\x1b[2K\u202e\xff\u009b", 1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = Text(s)
	}
}
