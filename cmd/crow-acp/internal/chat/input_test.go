package chat

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// scripted is a lineReader that returns its lines in order, then EOF.
type scripted struct {
	lines   []string
	prompts []string
}

func (s *scripted) ReadLine(prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	if len(s.lines) == 0 {
		return "", io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, nil
}
func (s *scripted) Remember(string) {}
func (s *scripted) Close() error    { return nil }

// TestReadPrompt: a backslash at a line's end continues the prompt; a
// line of """ opens a block that the next one closes (blank lines and
// backslashes inside are kept); EOF inside a prompt sends what was typed.
func TestReadPrompt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
		wantP []string
	}{
		{"one line", []string{"hello"}, "hello", []string{"> "}},
		{"continued", []string{`first \`, `second`}, "first \nsecond", []string{"> ", "… "}},
		{"block", []string{`"""`, "a", "", `b \`, `"""`}, "a\n\nb \\", []string{"> ", "… ", "… ", "… ", "… "}},
		{"EOF inside", []string{`a \`}, "a ", []string{"> ", "… "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scripted{lines: tc.lines}
			c := &Chat{lines: r}
			got, err := c.readPrompt()
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if !reflect.DeepEqual(r.prompts, tc.wantP) {
				t.Errorf("prompts %q, want %q", r.prompts, tc.wantP)
			}
		})
	}
}

// TestComplete: Tab completes the chat's and the agent's slash commands at
// the start of the line only.
func TestComplete(t *testing.T) {
	c := &Chat{commands: []acp.AvailableCommand{{Name: "compact"}}}
	comp := completer{commands: c.complete}
	cands, n := comp.Do([]rune("/c"), 2)
	var got []string
	for _, r := range cands {
		got = append(got, string(r))
	}
	if n != 2 || strings.Join(got, ",") != "ompact " {
		t.Errorf("/c completes to %q (%d)", got, n)
	}
	if cands, _ := comp.Do([]rune("/re"), 3); len(cands) != 1 || string(cands[0]) != "sume " {
		t.Errorf("/re completes to %q", cands)
	}
	if cands, _ := comp.Do([]rune("say /c"), 6); cands != nil {
		t.Errorf("completes inside a prompt: %q", cands)
	}
}

// TestPlainReader: lines from a pipe, CRLF trimmed, the last line without
// a newline kept, then EOF; Close ends a wait.
func TestPlainReader(t *testing.T) {
	p := newPlainReader(strings.NewReader("one\r\ntwo"), io.Discard, false)
	for _, want := range []string{"one", "two"} {
		if got, err := p.ReadLine("> "); got != want || err != nil {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if _, err := p.ReadLine("> "); err != io.EOF {
		t.Fatalf("after the input: %v", err)
	}
	pr, _ := io.Pipe()
	blocked := newPlainReader(pr, io.Discard, false)
	done := make(chan error)
	go func() { _, err := blocked.ReadLine("> "); done <- err }()
	blocked.Close()
	if err := <-done; err != io.EOF {
		t.Fatalf("after Close: %v", err)
	}
}
