package agent

import (
	"testing"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

func TestDeriveTitle(t *testing.T) {
	long := "Refactor the payment service so that retries use exponential backoff and jitter everywhere"
	cases := []struct {
		name  string
		parts []persistence.Part
		want  string
	}{
		{"first non-empty line, spaces collapsed", []persistence.Part{{Type: "text", Text: "\n  fix   the\tbuild \nmore detail"}}, "fix the build"},
		{"cut at a word", []persistence.Part{{Type: "text", Text: long}}, "Refactor the payment service so that retries use…"},
		{"resource only", []persistence.Part{{Type: "resource_link", URI: "file:///src/main.go", Name: "main.go"}}, "main.go"},
		{"embedded resource named by its uri", []persistence.Part{{Type: "resource", URI: "file:///src/db.go", Text: "x"}}, "db.go"},
		{"nothing to name it by", []persistence.Part{{Type: "text", Text: "  \n "}}, ""},
	}
	for _, tc := range cases {
		got := deriveTitle(tc.parts)
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > maxTitleRunes {
			t.Errorf("%s: %d runes, more than %d", tc.name, n, maxTitleRunes)
		}
	}
}

func TestShortenWithoutSpaces(t *testing.T) {
	s := "ääääääääääääääääääääääääääääääääääääääääääääääääääääääääääääääääääääää"
	got := shorten(s, 10)
	if got != "ääääääääää"[:len("ääääääääää")-len("ä")]+"…" {
		t.Fatalf("got %q", got)
	}
}
