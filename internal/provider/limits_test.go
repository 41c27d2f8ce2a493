package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestEndlessModelOutputIsBounded: a model that never stops is cut off at the
// configured limit with a LimitError (or at the request timeout), and the
// Result keeps what was streamed, at most one event past the limit (issue 14,
// case 2: each of these grew memory without bound or never ended).
func TestEndlessModelOutputIsBounded(t *testing.T) {
	const limit = 64 << 10
	const event = 4<<10 + 512 // one chunk of the endless stream
	for _, c := range []struct {
		endless string
		what    string // the LimitError's What; "" = the request timeout
		check   func(t *testing.T, res *provider.Result, shown int)
	}{
		{fakemodel.EndlessText, provider.LimitReply, func(t *testing.T, res *provider.Result, shown int) {
			if len(res.Text) < limit || len(res.Text) > limit+event || len(res.Text) != shown {
				t.Errorf("kept %d bytes, shown %d; want the %d streamed", len(res.Text), shown, shown)
			}
		}},
		{fakemodel.EndlessArguments, provider.LimitArguments, func(t *testing.T, res *provider.Result, _ int) {
			if len(res.ToolCalls) != 1 || len(res.ToolCalls[0].Arguments) < limit || len(res.ToolCalls[0].Arguments) > limit+event {
				t.Errorf("tool calls kept: %d", len(res.ToolCalls))
			}
		}},
		{fakemodel.EndlessEvent, provider.LimitEvent, nil},
		{fakemodel.EndlessKeepAlive, "", nil},
	} {
		t.Run(c.endless, func(t *testing.T) {
			m := fakemodel.Start()
			t.Cleanup(m.Close)
			m.Enqueue(fakemodel.Reply{Endless: c.endless})
			client := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), Timeout: 500 * time.Millisecond,
				MaxReplyBytes: limit, MaxArgumentBytes: limit, MaxEventBytes: limit})
			// A hang guard, far beyond what the limits allow.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			shown := 0
			res, err := client.Stream(ctx, provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Content: "go"}}},
				func(ev provider.Event) error {
					if ev.Kind == provider.EventText {
						shown += len(ev.Text)
					}
					return nil
				})
			if ctx.Err() != nil {
				t.Fatalf("the stream ran until the hang guard: %v", err)
			}
			var le *provider.LimitError
			switch {
			case c.what == "" && (!errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "500ms timeout")):
				t.Fatalf("want the request timeout, got %v", err)
			case c.what != "" && (!errors.As(err, &le) || le.What != c.what || le.Limit != limit):
				t.Fatalf("want a %s LimitError, got %v", c.what, err)
			case c.what != "" && !strings.Contains(err.Error(), "65536 bytes"):
				t.Fatalf("the error does not say the limit: %v", err)
			}
			if c.check != nil {
				c.check(t, res, shown)
			}
		})
	}
}

// TestSSEDecoderKeepsFraming: the bounded decoder reads events as the SDK's
// did: comments skipped, data lines joined, CRLF line ends, event names.
func TestSSEDecoderKeepsFraming(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{RawSSE: ": keep-alive\r\n\r\n" +
		"data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"he\"}}]}\r\n\r\n" +
		"event: message\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"llo\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"})
	client := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.URL(), MaxEventBytes: 1024})
	res, err := client.Stream(context.Background(), provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Content: "go"}}}, nil)
	if err != nil || res.Text != "hello" {
		t.Fatalf("got %q, %v", res.Text, err)
	}
}
