package postgres

import (
	"strings"
	"testing"
)

func TestKeywordDSNParse(t *testing.T) {
	for dsn, want := range map[string]string{
		"host=h password=pw":                    "pw",
		"host = h  password = 'p w\\'x' user=u": "p w'x",
		"password=a\\ b":                        "a b",
		"dbname=crow":                           "",
		"postgres://u:secret@h/db":              "secret",
		"postgres://u@h/db?password=q":          "q",
	} {
		if got := Password(dsn); got != want {
			t.Errorf("Password(%q) = %q, want %q", dsn, got, want)
		}
		if want != "" && strings.Contains(Redact(dsn), want) {
			t.Errorf("Redact(%q) = %q", dsn, Redact(dsn))
		}
	}
	for _, s := range []string{"", "crow.db", "/a/b=c.db", "host", "host=", "bogus=1", "host='x", "=x"} {
		if s != "host=" && IsKeywordDSN(s) {
			t.Errorf("%q taken for a keyword DSN", s)
		}
	}
}

// FuzzKeywordDSN: the keyword parser never panics, and whatever password it
// reads, Redact hides.
func FuzzKeywordDSN(f *testing.F) {
	for _, s := range []string{"host=h password=pw", "password='a\\'b' host=x", "host='unclosed", "host=h\x00 password=\xff",
		"password=" + strings.Repeat("x", 1<<16), "\x1b[31mhost=h", "host=h\npassword=p\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		pairs, ok := parseKeywordDSN(dsn)
		if !ok {
			return
		}
		red := redactKeywordDSN(dsn, pairs)
		again, ok := parseKeywordDSN(red)
		if !ok {
			t.Fatalf("Redact(%q) = %q no longer parses", dsn, red)
		}
		for _, p := range again {
			if (p.key == "password" || p.key == "sslpassword") && p.value != "xxxxx" {
				t.Fatalf("Redact(%q) = %q keeps %s=%q", dsn, red, p.key, p.value)
			}
		}
	})
}
