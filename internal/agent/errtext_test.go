package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Zed shows an agent's error as its message followed by ": " and the
// pretty-printed error.data (the Rust SDK's Display for acp::Error). What
// the user must know is in the message, one readable sentence; data is a
// few scalars (issue 15 item 7).
func TestErrorsReadAsOneSentence(t *testing.T) {
	body := `{"error":{"message":"Rate limit reached for gpt-x in organization org-1 on tokens per min.\nLimit 30000, Used 29000.","type":"tokens"}}`
	for name, err := range map[string]error{
		"500 retried":   modelError(&provider.APIError{StatusCode: 500, Message: "upstream exploded"}, retryState{attempts: 4}),
		"429 wait":      modelError(&provider.APIError{StatusCode: 429, Message: body, RetryAfter: "60"}, retryState{attempts: 1}),
		"401":           modelError(&provider.APIError{StatusCode: 401, Message: "Incorrect API key provided."}, retryState{attempts: 1}),
		"cut midstream": modelError(errors.New("streaming: the stream broke off: unexpected EOF"), retryState{attempts: 1, forwarded: true}),
		"store full":    storeError("save prompt", fmt.Errorf("sqlite: append: %w: database or disk is full", persistence.ErrStorageFull)),
		"store other":   storeError("load session", errors.New("sqlite: query messages: disk I/O error\nmore")),
		"overflow":      overflow(request.Meter{Model: request.Model{Name: "m"}}, 9000, "automatic compaction is off (CROW_AUTO_COMPACT=0); run /compact or start a new session"),
	} {
		var e *acp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: not an *acp.Error: %v", name, err)
		}
		msg := e.Message
		switch {
		case strings.ContainsAny(msg, "\n\r{}"):
			t.Errorf("%s: message is not one plain line: %q", name, msg)
		case !strings.HasSuffix(msg, ".") || strings.Count(strings.TrimSuffix(msg, "."), ". ") > 0:
			t.Errorf("%s: message is not one sentence: %q", name, msg)
		case !unicode.IsUpper([]rune(msg)[0]):
			t.Errorf("%s: message does not start a sentence: %q", name, msg)
		case len(msg) > 400:
			t.Errorf("%s: message of %d bytes: %q", name, len(msg), msg)
		}
		data, _ := e.Data.(map[string]any)
		if len(data) > 3 {
			t.Errorf("%s: data has %d keys, want at most 3: %v", name, len(data), data)
		}
		for k, v := range data {
			switch v.(type) {
			case string, bool, int, float64:
			default:
				t.Errorf("%s: data.%s is not a scalar: %#v", name, k, v)
			}
		}
	}
}

func TestModelErrorSaysWhatToDo(t *testing.T) {
	for _, c := range []struct {
		err  error
		st   retryState
		want []string
	}{
		{&provider.APIError{StatusCode: 500, Message: "boom"}, retryState{attempts: 4}, []string{"answered 500 after 4 attempts: boom", "try again later"}},
		{&provider.APIError{StatusCode: 429, Message: "slow down", RetryAfter: "60"}, retryState{attempts: 1}, []string{"wait 60 before trying again"}},
		{&provider.APIError{StatusCode: 401, Message: "bad key"}, retryState{attempts: 1}, []string{"check the API key"}},
		{&provider.APIError{StatusCode: 404, Message: "no such model"}, retryState{attempts: 1}, []string{"check the endpoint URL and the model name"}},
		{errors.New("the stream broke off"), retryState{attempts: 1, forwarded: true}, []string{"partial reply is kept"}},
	} {
		msg := modelError(c.err, c.st).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("modelError(%v) = %q, want it to say %q", c.err, msg, w)
			}
		}
	}
}

// An endpoint's error body is untrusted: whatever it holds, the detail
// quoted in an error message is one bounded line.
func FuzzErrorDetail(f *testing.F) {
	for _, s := range []string{
		"", "plain", "two. sentences. here.", `{"error":{"message":"Rate limited.\nTry later."}}`,
		`{"detail":"x"}`, `{"error":"flat"}`, `{"errors":{"message":"nested"}}`, `{"no":"message"}`, `[1,2]`,
		"\x00\x1b[31mred\x1b[0m\r\n\t", string([]byte{0xff, 0xfe, '{'}), strings.Repeat("é", 10000),
		`{"error":` + strings.Repeat(`{"error":`, 5000) + `"deep"` + strings.Repeat("}", 5001),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := detail(s)
		if strings.ContainsAny(d, "\n\r") {
			t.Fatalf("detail(%q) = %q spans lines", s, d)
		}
		if n := len([]rune(d)); n > maxDetailRunes+1 {
			t.Fatalf("detail(%q) has %d runes", s, n)
		}
	})
}
