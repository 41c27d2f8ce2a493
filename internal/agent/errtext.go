package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// Zed shows an error as its message followed by the pretty-printed
// error.data, so the message carries what the user must know in one
// readable sentence (what failed, what to do) and data stays a few scalars
// a program may act on.

// maxDetailRunes bounds a detail quoted from elsewhere (a provider's error
// text, a driver's error) inside an error message.
const maxDetailRunes = 240

// detail makes quoted text fit inside a sentence: the message of a JSON
// error body rather than the body, one line, its own sentence breaks made
// clause breaks, bounded, no trailing punctuation.
func detail(s string) string {
	if m := jsonMessage(s); m != "" {
		s = m
	}
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, ". ", "; ")
	if utf8.RuneCountInString(s) > maxDetailRunes {
		s = string([]rune(s)[:maxDetailRunes]) + "…"
	}
	return strings.TrimRight(s, ".;: ")
}

// sentence ends s with a full stop.
func sentence(s string) string {
	s = strings.TrimRight(s, " ")
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// jsonMessage is the human text in a JSON error body ("message", "detail"
// or a string "error", at any depth), "" when s is not such a body.
func jsonMessage(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") {
		return ""
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return ""
	}
	var find func(v any) string
	find = func(v any) string {
		obj, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		for _, k := range []string{"message", "detail", "error"} {
			if str, ok := obj[k].(string); ok && strings.TrimSpace(str) != "" {
				return str
			}
		}
		for _, k := range []string{"error", "errors"} {
			if m := find(obj[k]); m != "" {
				return m
			}
		}
		return ""
	}
	if m := find(v); m != "" {
		return m
	}
	return "an error body without a message"
}

// unknownSession is -32002 for a session id this agent cannot find.
func unknownSession(id string) error {
	return acp.ResourceNotFound("Unknown session %q: it was never created here or has been deleted; create one with session/new.", id)
}

// reServerParser matches llama.cpp's errors for model output its chat
// parser cannot read (the tool-call markup its template expects): HTTP 500
// "Failed to parse input at pos 13: <tool_call>…" on a plain request, an
// error event with the same message inside a stream; older builds say
// "Failed to parse tool call", the grammar sampler "Unexpected empty
// grammar stack".
//
// Compiled on first use: package initialisers run before initialize is
// answered (TestStartupInitCost).
var reServerParser = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)failed to parse (?:input at pos(?:ition)? \d+|tool call)|empty grammar stack`)
})

// serverParserFailed reports whether a model request failed because the
// server's own output parser did: the endpoint was reached and the request
// was valid.
func serverParserFailed(err error) bool {
	text := err.Error()
	var api *provider.APIError
	if errors.As(err, &api) {
		text = api.Message
	}
	if len(text) > 4<<10 {
		text = text[:4<<10]
	}
	return reServerParser().MatchString(text)
}

// parserAdvice is what to do when the server's output parser failed.
const parserAdvice = "the endpoint is reachable: the model server's own parser could not read the reply the model wrote (its tool-call markup), which is a fault of the server's chat template or parser for this model. " +
	"Try again, update the server (llama.cpp), start llama-server with another --chat-template or --chat-template-file, " +
	`or turn the tools off (CROW_TOOLS=off, or tools = "off" in the configuration file)`

// overflow is the error for a request that cannot be sent.
func overflow(m request.Meter, used int, why string) error {
	e := acp.InternalError("%s", sentence(fmt.Sprintf("The context window is full: the next model request needs %d tokens and %s has %d with %d reserved for the reply; %s",
		used, m.Model.Name, m.Settings.Window, m.Settings.Reserve(), why)))
	e.Data = map[string]any{"reason": "context_window_exceeded", "tokens": used, "window": m.Settings.Window}
	return e
}

// NewConnectionID returns a fresh connection id.
func NewConnectionID() string { return request.NewID("conn_") }

// storeError maps a persistence error to the wire: one sentence naming the
// step that could not be saved or read and what to do.
func storeError(op string, err error) error {
	var acpErr *acp.Error
	switch {
	case errors.As(err, &acpErr):
		return err
	case errors.Is(err, persistence.ErrNotFound):
		return acp.ResourceNotFound("%s", sentence(fmt.Sprintf("Could not %s: %s", op, detail(err.Error()))))
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, persistence.ErrLeaseLost):
		return leaseLostError(op)
	case errors.Is(err, persistence.ErrStorageFull):
		e := acp.InternalError("Could not %s: the session database is full (%s); free space on its disk and try again, nothing was saved for this step.", op, detail(err.Error()))
		e.Data = map[string]any{"storage": "full"}
		return e
	case errors.Is(err, persistence.ErrStorageReadOnly):
		e := acp.InternalError("Could not %s: the session database is read-only (%s); check the permissions of the file and its directory, nothing was saved for this step.", op, detail(err.Error()))
		e.Data = map[string]any{"storage": "read-only"}
		return e
	default:
		return acp.InternalError("Could not %s: the session database failed (%s); try again, and see the log if it persists.", op, detail(err.Error()))
	}
}

// leaseLostError is what a write (or a turn) answers once this process
// lost the session's lease.
func leaseLostError(op string) error {
	e := acp.InternalError("Could not %s: this process lost the session's lock (no heartbeat for the lease TTL, e.g. the computer slept, so another crow-acp process may have taken the session over); "+
		"the turn was stopped and nothing more of it was saved: load the session again to see its current state.", op)
	e.Data = map[string]any{"lease": "lost"}
	return e
}
