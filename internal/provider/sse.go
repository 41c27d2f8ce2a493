package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// ErrLimit: the model's output went past one of the configured limits
// (bytes of one reply, of one tool call's arguments, of one SSE event).
// What was streamed until then is in the Result.
var ErrLimit = errors.New("model output over the limit")

// What a LimitError names.
const (
	LimitReply     = "reply"
	LimitArguments = "tool call arguments"
	LimitEvent     = "SSE event"
	LimitToolCalls = "tool calls"
)

// MaxToolCalls bounds the tool calls of one reply. Models make a few at a
// time; an endpoint that streams thousands would have each run and stored
// (reads run without asking), and each new call is matched against all
// before it.
const MaxToolCalls = 128

// LimitError names the limit a stream went past.
type LimitError struct {
	What  string // LimitReply, LimitArguments, LimitEvent or LimitToolCalls
	Limit int    // bytes; calls for LimitToolCalls
}

func (e *LimitError) Error() string {
	if e.What == LimitToolCalls {
		return fmt.Sprintf("the model's reply passed the limit of %d tool calls", e.Limit)
	}
	return fmt.Sprintf("the model's %s passed the limit of %d bytes", e.What, e.Limit)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// sseDecoder is ssestream's text/event-stream decoder with a bound on one
// event: openai-go's bounds a line (32 MiB) but not an event, which grows
// without end on a stream of data: lines that never ends. Lines and fields
// are read the same way (comments skipped, "data" lines joined with "\n",
// an event dispatched on an empty line).
type sseDecoder struct {
	rc   io.ReadCloser
	scn  *bufio.Scanner
	max  int
	evt  ssestream.Event
	data []byte
	err  error
}

var _ ssestream.Decoder = (*sseDecoder)(nil)

func newSSEDecoder(rc io.ReadCloser, maxEvent int) *sseDecoder {
	scn := bufio.NewScanner(rc)
	// A line longer than an event can hold is already over the limit;
	// +2 leaves room for the line break the scanner needs to see.
	scn.Buffer(make([]byte, 0, min(maxEvent+2, 64<<10)), maxEvent+2)
	return &sseDecoder{rc: rc, scn: scn, max: maxEvent}
}

func (d *sseDecoder) Next() bool {
	if d.err != nil {
		return false
	}
	event := ""
	d.data = d.data[:0]
	for d.scn.Scan() {
		line := d.scn.Bytes()
		if len(line) == 0 {
			if len(d.data) == 0 {
				event = ""
				continue
			}
			d.evt = ssestream.Event{Type: event, Data: d.data}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			if len(d.data)+len(value)+1 > d.max {
				d.err = &LimitError{What: LimitEvent, Limit: d.max}
				return false
			}
			d.data = append(d.data, value...)
			d.data = append(d.data, '\n')
		}
	}
	if err := d.scn.Err(); errors.Is(err, bufio.ErrTooLong) {
		d.err = &LimitError{What: LimitEvent, Limit: d.max}
	} else {
		d.err = err
	}
	return false
}

func (d *sseDecoder) Event() ssestream.Event { return d.evt }
func (d *sseDecoder) Close() error           { return d.rc.Close() }
func (d *sseDecoder) Err() error             { return d.err }

// boundEvents is a middleware that bounds each event of a response's event
// stream to max bytes (eventBound): the Responses API's stream is decoded
// by openai-go, whose decoder joins an event's data lines without a bound.
func boundEvents(max int) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.Body != nil {
			res.Body = &eventBound{ReadCloser: res.Body, max: max}
		}
		return res, err
	}
}

// eventBound is a body that fails with a *LimitError once one event of
// its event stream, the bytes between two empty lines (line breaks
// aside), passes max bytes.
type eventBound struct {
	io.ReadCloser
	max, n  int  // n: bytes of the current event
	midLine bool // a byte since the last line break (the zero value: a stream's start)
	afterCR bool // the last byte was a CR (a CRLF is one break)
	err     error
}

func (b *eventBound) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	for i, c := range p[:n] {
		switch {
		case c == '\n' && b.afterCR:
			b.afterCR = false
		case c == '\n' || c == '\r':
			if !b.midLine {
				b.n = 0 // an empty line ends the event
			}
			b.midLine, b.afterCR = false, c == '\r'
		default:
			b.midLine, b.afterCR = true, false
			if b.n++; b.n > b.max {
				b.err = &LimitError{What: LimitEvent, Limit: b.max}
				return i, b.err
			}
		}
	}
	return n, err
}

// outputLimits are the bounds of one reply.
type outputLimits struct{ reply, args, event int }

// outputSize is how much of a reply has been streamed so far.
type outputSize struct {
	reply int // text and reasoning
	args  int // the longest tool call's arguments
	calls int // tool calls begun
}

func (o *outputSize) add(ev Event) {
	switch ev.Kind {
	case EventText, EventReasoning:
		o.reply += len(ev.Text)
	case EventToolCallDelta:
		o.args = max(o.args, len(ev.ToolCall.Arguments))
	}
}

func (l outputLimits) check(o outputSize) error {
	switch {
	case o.reply > l.reply:
		return &LimitError{What: LimitReply, Limit: l.reply}
	case o.args > l.args:
		return &LimitError{What: LimitArguments, Limit: l.args}
	case o.calls > MaxToolCalls:
		return &LimitError{What: LimitToolCalls, Limit: MaxToolCalls}
	}
	return nil
}

// decoder reads the response's event stream within the event limit.
func (c *OpenAIClient) decoder(res *http.Response) ssestream.Decoder {
	if res == nil || res.Body == nil {
		return nil
	}
	return newSSEDecoder(res.Body, c.limits.event)
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
