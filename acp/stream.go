package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// DefaultMaxLineBytes caps one incoming message. Image prompts and large
// embedded files need far more than bufio.Scanner's 64 KiB default: crow's
// default prompt is 50 MiB of images (69.9 MB in base64) and 1 MiB of text
// (6 MiB JSON-escaped at worst) with its envelope, 73.7 MiB in all
// (imagecheck.LineBytes; cmd/crow-acp's configuration derives the agent's
// line from its limits). One frame the agent writes holds at most one
// image, within the TS SDK's 32 MiB.
const DefaultMaxLineBytes = 74 << 20

// Direction of a frame, for frame observers.
type Direction string

const (
	Inbound  Direction = "in"
	Outbound Direction = "out"
)

var errLineTooLong = errors.New("line too long")

// LineStream is ACP's framing: one JSON object per line. It implements
// jsonrpc2.ObjectStream, but unlike jsonrpc2's own streams it survives bad
// input: a malformed or invalid line is answered with a JSON-RPC error and
// reading goes on. It also translates incoming request ids to internal
// numbers so that any id the client sends (string, number of any form, null)
// is echoed back byte-for-byte, which jsonrpc2's ID type cannot do.
type LineStream struct {
	r       *bufio.Reader
	w       io.Writer
	maxLine int
	onFrame func(Direction, []byte)
	onError func(error)
	// onLine, when set, sees each well-framed line first and reports
	// whether it handled it; the client side uses it for session/update
	// (see ClientConn.fastUpdate).
	onLine func(line []byte) bool

	wmu sync.Mutex // one writer: every frame is written whole, in order

	idmu   sync.Mutex
	nextID uint64
	ids    map[uint64]json.RawMessage // internal id -> id as the client sent it
}

// NewLineStream reads frames from r and writes them to w. onFrame (may be
// nil) sees every frame in both directions exactly as read or written,
// without the trailing newline; it must not retain the slice.
func NewLineStream(r io.Reader, w io.Writer, maxLine int, onFrame func(Direction, []byte)) *LineStream {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return &LineStream{
		r:       bufio.NewReaderSize(r, 64<<10),
		w:       w,
		maxLine: maxLine,
		onFrame: onFrame,
		ids:     make(map[uint64]json.RawMessage),
	}
}

// ReadObject implements jsonrpc2.ObjectStream. It returns only well-formed
// JSON-RPC messages; everything else is answered here and skipped.
func (s *LineStream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if errors.Is(err, errLineTooLong) {
			s.writeError(nil, InvalidRequest("The message is too large: one line may hold at most %d bytes; nothing of it was read.", s.maxLine))
			continue
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines carry nothing; tolerate them
		}
		if s.onFrame != nil {
			s.onFrame(Inbound, line)
		}
		if s.onLine != nil && s.onLine(line) {
			continue
		}
		msg, id, bad := s.check(line)
		if bad != nil {
			s.writeError(id, bad)
			continue
		}
		if err := json.Unmarshal(msg, v); err != nil {
			// check() mirrors jsonrpc2's rules, so this is a bug, not input.
			s.writeError(id, InvalidRequest("Invalid JSON-RPC message: %s.", strings.TrimRight(err.Error(), ".")))
			continue
		}
		return nil
	}
}

// readLine reads up to '\n' without ever holding more than maxLine bytes.
func (s *LineStream) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !tooLong {
			n := len(line) + len(chunk)
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				n--
			}
			if n > s.maxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return nil, errLineTooLong
			}
			if len(line) > 0 {
				return line, nil // a last line without '\n'; EOF comes next call
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// check validates the JSON-RPC envelope and rewrites request ids. It returns
// the message to hand to jsonrpc2, or the id (as sent, may be nil) and the
// error to answer with.
func (s *LineStream) check(line []byte) ([]byte, json.RawMessage, *Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		if json.Valid(line) {
			return nil, nil, InvalidRequest("Invalid request: expected a JSON-RPC object; batches are not supported.")
		}
		return nil, nil, &Error{Code: CodeParseError, Message: "Parse error: the line is not valid JSON (" + err.Error() + ")."}
	}
	id, hasID := fields["id"]
	if hasID && !validID(id) {
		return nil, nil, InvalidRequest("Invalid request: id must be a string, a number or null.")
	}
	if v := fields["jsonrpc"]; string(v) != `"2.0"` {
		return nil, id, InvalidRequest(`Invalid request: "jsonrpc" must be "2.0".`)
	}
	method, isRequest := fields["method"]
	_, hasResult := fields["result"]
	_, hasError := fields["error"]
	if !isRequest {
		// A response to one of our calls: ids are ours, so they must be ones
		// jsonrpc2 can parse; anything else cannot match a call.
		if !hasID || hasResult == hasError || !ourID(id) {
			return nil, nil, InvalidRequest("Invalid message: neither a request nor a response to a pending call.")
		}
		return line, nil, nil
	}
	var name string
	if json.Unmarshal(method, &name) != nil || name == "" {
		return nil, id, InvalidRequest(`Invalid request: "method" must be a non-empty string.`)
	}
	if hasResult || hasError {
		return nil, id, InvalidRequest(`Invalid request: a request cannot carry "result" or "error".`)
	}
	if !hasID {
		return line, nil, nil // notification
	}
	s.idmu.Lock()
	s.nextID++
	internal := s.nextID
	s.ids[internal] = append(json.RawMessage(nil), id...)
	s.idmu.Unlock()
	fields["id"] = json.RawMessage(strconv.FormatUint(internal, 10))
	msg, err := json.Marshal(fields)
	if err != nil {
		return nil, id, InvalidRequest("Invalid request: %s.", strings.TrimRight(err.Error(), "."))
	}
	return msg, nil, nil
}

func validID(id json.RawMessage) bool {
	switch t := bytes.TrimSpace(id); {
	case len(t) == 0:
		return false
	case t[0] == '"' || string(t) == "null":
		return true
	default:
		_, err := strconv.ParseFloat(string(t), 64)
		return err == nil
	}
}

// ourID reports whether id could be one of the ids we put on our calls.
func ourID(id json.RawMessage) bool {
	var n uint64
	if json.Unmarshal(id, &n) == nil {
		return true
	}
	var s string
	return json.Unmarshal(id, &s) == nil
}

// takeID returns (and forgets) the id the client sent for an internal id.
func (s *LineStream) takeID(internal jsonrpc2.ID) json.RawMessage {
	s.idmu.Lock()
	defer s.idmu.Unlock()
	id, ok := s.ids[internal.Num]
	if !ok {
		return json.RawMessage("null")
	}
	delete(s.ids, internal.Num)
	return id
}

// WriteObject implements jsonrpc2.ObjectStream (our calls to the client).
func (s *LineStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.writeFrame(b)
}

type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc2.Error `json:"error,omitempty"`
}

type wireNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// writeResult answers the request whose id (as sent) is id.
func (s *LineStream) writeResult(id json.RawMessage, result any) error {
	b, err := json.Marshal(result)
	if err != nil {
		return s.writeError(id, InternalError("Could not encode the result: %s.", strings.TrimRight(err.Error(), ".")))
	}
	return s.writeJSON(wireResponse{JSONRPC: "2.0", ID: id, Result: b})
}

// writeError answers with an error; a nil id is written as null.
func (s *LineStream) writeError(id json.RawMessage, err error) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	return s.writeJSON(wireResponse{JSONRPC: "2.0", ID: id, Error: wireError(err)})
}

func (s *LineStream) writeNotification(method string, params any) error {
	return s.writeJSON(wireNotification{JSONRPC: "2.0", Method: method, Params: params})
}

func (s *LineStream) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("acp: encode frame: %w", err)
	}
	return s.writeFrame(b)
}

// writeFrame writes one compact JSON object and its newline atomically.
func (s *LineStream) writeFrame(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.onFrame != nil {
		s.onFrame(Outbound, b)
	}
	// The newline goes into spare capacity when the caller left some (the
	// text-chunk fast path does): no copy per streamed token.
	var buf []byte
	if cap(b) > len(b) {
		buf = append(b, '\n')
	} else {
		buf = append(append(make([]byte, 0, len(b)+1), b...), '\n')
	}
	return s.writeLocked(buf)
}

// writeLocked writes buf, whole lines, with s.wmu held, and reports a
// failed write to onError.
func (s *LineStream) writeLocked(buf []byte) error {
	_, err := s.w.Write(buf)
	if err != nil && s.onError != nil {
		s.onError(err)
	}
	return err
}

// Close implements jsonrpc2.ObjectStream. The process owns stdin and stdout;
// closing them is its job, so this does nothing.
func (s *LineStream) Close() error { return nil }
