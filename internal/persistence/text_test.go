package persistence

import (
	"encoding/json"
	"testing"
)

func TestValidText(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"plain":            "plain",
		"🦀 \uFFFD":         "🦀 \uFFFD",
		"a\x00b":           "a\uFFFDb",
		"\xff\xfe":         "\uFFFD\uFFFD",
		"cut \xe2\x82 end": "cut \uFFFD\uFFFD end",
	} {
		if got := ValidText(in); got != want {
			t.Errorf("ValidText(%q) = %q, want %q", in, got, want)
		}
	}
	// Like encoding/json, so a tool call id matches its copy inside JSON.
	for _, s := range []string{"\xff\xfe", "cut \xe2\x82 end", "ok"} {
		b, _ := json.Marshal(s)
		var back string
		json.Unmarshal(b, &back)
		if back != ValidText(s) {
			t.Errorf("json round trip of %q = %q, ValidText = %q", s, back, ValidText(s))
		}
	}
}
