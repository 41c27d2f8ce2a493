package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"unicode/utf8"
)

// session/update frames are most of what crow-acp writes: one per streamed
// token, and a whole conversation on session/load. Through encoding/json
// each nested union (SessionUpdate → ToolCallContent → ContentBlock) has its
// own MarshalJSON, whose output encoding/json scans and copies again at
// every level: a text went through about four passes. appendUpdateFrame
// writes the frame in one pass instead, with the bytes encoding/json would
// write (encode_test.go compares every variant, and fuzzes the strings).
// The small updates without nested unions (plan, commands, mode, config
// options, session info, usage) go through encoding/json once.

// appendUpdateFrame appends the whole session/update frame for n.
func appendUpdateFrame(b []byte, n *SessionNotification) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = appendString(b, n.SessionID)
	b = append(b, `,"update":`...)
	b, err := appendUpdate(b, &n.Update)
	if err != nil {
		return nil, err
	}
	if b, err = appendMeta(b, n.Meta); err != nil {
		return nil, err
	}
	return append(b, "}}"...), nil
}

var errEmptyUpdate = errors.New("acp: empty SessionUpdate")

// appendUpdate appends u as its MarshalJSON writes it.
func appendUpdate(b []byte, u *SessionUpdate) ([]byte, error) {
	tag, v := u.variant()
	switch v := v.(type) {
	case *ContentChunk:
		b = appendTag(b, "sessionUpdate", tag)
		b = append(b, `,"content":`...)
		b, err := appendContentBlock(b, &v.Content)
		if err != nil {
			return nil, err
		}
		if v.MessageID != "" {
			b = append(b, `,"messageId":`...)
			b = appendString(b, v.MessageID)
		}
		return appendMetaClose(b, v.Meta)
	case *ToolCall:
		b = appendTag(b, "sessionUpdate", tag)
		return appendToolCallFields(b, toolCallFields{v.ToolCallID, v.Title, true, v.Kind, v.Status, v.Content, v.Locations, v.RawInput, v.RawOutput, v.Meta})
	case *ToolCallUpdate:
		b = appendTag(b, "sessionUpdate", tag)
		return appendToolCallFields(b, toolCallFields{v.ToolCallID, v.Title, false, v.Kind, v.Status, v.Content, v.Locations, v.RawInput, v.RawOutput, v.Meta})
	case nil:
		if u.Other != nil {
			return appendRaw(b, u.Other)
		}
		return nil, errEmptyUpdate
	}
	// No nested unions: encoding/json's one pass, spliced after the tag.
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = appendTag(b, "sessionUpdate", tag)
	if inner := body[1 : len(body)-1]; len(inner) > 0 {
		b = append(b, ',')
		b = append(b, inner...)
	}
	return append(b, '}'), nil
}

// appendTag opens a tagged union's object with its tag (tags are constants
// that need no escaping).
func appendTag(b []byte, key, tag string) []byte {
	b = append(b, `{"`...)
	b = append(b, key...)
	b = append(b, `":"`...)
	b = append(b, tag...)
	return append(b, '"')
}

// toolCallFields are the fields ToolCall and ToolCallUpdate share, in their
// order; a ToolCall always has a title.
type toolCallFields struct {
	id        string
	title     string
	needTitle bool
	kind      ToolKind
	status    ToolCallStatus
	content   []ToolCallContent
	locations []ToolCallLocation
	rawInput  json.RawMessage
	rawOutput json.RawMessage
	meta      Meta
}

func appendToolCallFields(b []byte, f toolCallFields) ([]byte, error) {
	var err error
	b = append(b, `,"toolCallId":`...)
	b = appendString(b, f.id)
	if f.needTitle || f.title != "" {
		b = append(b, `,"title":`...)
		b = appendString(b, f.title)
	}
	if f.kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, string(f.kind))
	}
	if f.status != "" {
		b = append(b, `,"status":`...)
		b = appendString(b, string(f.status))
	}
	if len(f.content) > 0 {
		b = append(b, `,"content":[`...)
		for i := range f.content {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendToolCallContent(b, &f.content[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(f.locations) > 0 {
		b = append(b, `,"locations":[`...)
		for i, l := range f.locations {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendString(b, l.Path)
			if l.Line != nil {
				b = append(b, `,"line":`...)
				b = strconv.AppendInt(b, int64(*l.Line), 10)
			}
			if b, err = appendMetaClose(b, l.Meta); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if b, err = appendRawField(b, `,"rawInput":`, f.rawInput); err != nil {
		return nil, err
	}
	if b, err = appendRawField(b, `,"rawOutput":`, f.rawOutput); err != nil {
		return nil, err
	}
	return appendMetaClose(b, f.meta)
}

// appendToolCallContent appends c as its MarshalJSON writes it.
func appendToolCallContent(b []byte, c *ToolCallContent) ([]byte, error) {
	switch {
	case c.Content != nil:
		b = appendTag(b, "type", "content")
		b = append(b, `,"content":`...)
		b, err := appendContentBlock(b, &c.Content.Content)
		if err != nil {
			return nil, err
		}
		return appendMetaClose(b, c.Content.Meta)
	case c.Diff != nil:
		d := c.Diff
		b = appendTag(b, "type", "diff")
		b = append(b, `,"path":`...)
		b = appendString(b, d.Path)
		if d.OldText != nil {
			b = append(b, `,"oldText":`...)
			b = appendString(b, *d.OldText)
		}
		b = append(b, `,"newText":`...)
		b = appendString(b, d.NewText)
		return appendMetaClose(b, d.Meta)
	case c.Terminal != nil:
		b = appendTag(b, "type", "terminal")
		b = append(b, `,"terminalId":`...)
		b = appendString(b, c.Terminal.TerminalID)
		return appendMetaClose(b, c.Terminal.Meta)
	}
	return nil, errors.New("acp: empty ToolCallContent")
}

// appendContentBlock appends c as its MarshalJSON writes it.
func appendContentBlock(b []byte, c *ContentBlock) ([]byte, error) {
	var err error
	switch {
	case c.Text != nil:
		b = appendTag(b, "type", "text")
		b = append(b, `,"text":`...)
		b = appendString(b, c.Text.Text)
		return appendAnnotatedClose(b, c.Text.Annotations, c.Text.Meta)
	case c.Image != nil:
		v := c.Image
		b = appendTag(b, "type", "image")
		b = append(b, `,"data":`...)
		b = appendString(b, v.Data)
		b = append(b, `,"mimeType":`...)
		b = appendString(b, v.MimeType)
		b = appendOptString(b, `,"uri":`, v.URI)
		return appendAnnotatedClose(b, v.Annotations, v.Meta)
	case c.Audio != nil:
		v := c.Audio
		b = appendTag(b, "type", "audio")
		b = append(b, `,"data":`...)
		b = appendString(b, v.Data)
		b = append(b, `,"mimeType":`...)
		b = appendString(b, v.MimeType)
		return appendAnnotatedClose(b, v.Annotations, v.Meta)
	case c.ResourceLink != nil:
		v := c.ResourceLink
		b = appendTag(b, "type", "resource_link")
		b = append(b, `,"uri":`...)
		b = appendString(b, v.URI)
		b = append(b, `,"name":`...)
		b = appendString(b, v.Name)
		b = appendOptString(b, `,"title":`, v.Title)
		b = appendOptString(b, `,"description":`, v.Description)
		b = appendOptString(b, `,"mimeType":`, v.MimeType)
		if v.Size != nil {
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, *v.Size, 10)
		}
		return appendAnnotatedClose(b, v.Annotations, v.Meta)
	case c.Resource != nil:
		v := c.Resource
		r := &v.Resource
		b = appendTag(b, "type", "resource")
		b = append(b, `,"resource":{"uri":`...)
		b = appendString(b, r.URI)
		b = appendOptString(b, `,"mimeType":`, r.MimeType)
		if r.Text != nil {
			b = append(b, `,"text":`...)
			b = appendString(b, *r.Text)
		}
		if r.Blob != nil {
			b = append(b, `,"blob":`...)
			b = appendString(b, *r.Blob)
		}
		if b, err = appendMetaClose(b, r.Meta); err != nil {
			return nil, err
		}
		return appendAnnotatedClose(b, v.Annotations, v.Meta)
	}
	return nil, errors.New("acp: empty ContentBlock")
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendString(b, s)
}

// appendAnnotatedClose appends the optional annotations and _meta, and
// closes the object.
func appendAnnotatedClose(b []byte, annotations json.RawMessage, meta Meta) ([]byte, error) {
	b, err := appendRawField(b, `,"annotations":`, annotations)
	if err != nil {
		return nil, err
	}
	return appendMetaClose(b, meta)
}

// appendMetaClose appends the optional _meta and closes the object.
func appendMetaClose(b []byte, meta Meta) ([]byte, error) {
	b, err := appendMeta(b, meta)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendMeta(b []byte, meta Meta) ([]byte, error) {
	return appendRawField(b, `,"_meta":`, meta)
}

// appendRawField appends `key raw` unless raw is empty (omitempty).
func appendRawField(b []byte, key string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	return appendRaw(append(b, key...), raw)
}

// appendRaw appends a json.RawMessage as encoding/json writes one: checked,
// compacted, and with <, >, &, U+2028 and U+2029 escaped.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	start := len(b)
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	b = buf.Bytes()
	out := b[start:]
	if !bytes.ContainsAny(out, "<>&") && !bytes.Contains(out, []byte("\u2028")) && !bytes.Contains(out, []byte("\u2029")) {
		return b, nil
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, out)
	return append(b[:start], esc.Bytes()...), nil
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes encoding/json copies into a string as
// they are (it escapes control characters, '"', '\\', and <, >, & for
// HTML safety).
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// skipPlainWords returns the end of the run of whole eight-byte words of s,
// from i on, whose bytes are all plainASCII: most text is plain ASCII, and
// a word is tested in a few operations where bytes take a lookup each.
//
// A word v "has a zero byte" when (v - lowBits) &^ v & highBits is not zero,
// and "has a byte below n" (n <= 0x80) when (v - n*lowBits) &^ v & highBits
// is not zero; both are exact about whether such a byte exists, which is all
// this needs. '"' (0x22) and '&' (0x26) differ only in bit 2, '<' (0x3c)
// and '>' (0x3e) only in bit 1, so setting that bit tests each pair with one
// comparison.
func skipPlainWords(s string, i int) int {
	const (
		lowBits  = 0x0101010101010101
		highBits = 0x8080808080808080
	)
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		v := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		quoteAmp := (v | 0x04*lowBits) ^ 0x26*lowBits // a zero byte: " or &
		angle := (v | 0x02*lowBits) ^ 0x3e*lowBits    // a zero byte: < or >
		backslash := v ^ 0x5c*lowBits                 // a zero byte: backslash
		special := v |                                // non-ASCII: its high bit
			(v-0x20*lowBits)&^v | // control characters
			(quoteAmp-lowBits)&^quoteAmp |
			(angle-lowBits)&^angle |
			(backslash-lowBits)&^backslash
		if special&highBits != 0 {
			break
		}
	}
	return i
}

// appendString appends s as a JSON string exactly as encoding/json writes
// one (HTML-safe, invalid UTF-8 as U+FFFD, U+2028/U+2029 escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i = skipPlainWords(s, i) // most text is plain ASCII: eight bytes a step
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// framePool holds the buffers session/update frames are written into: a
// streamed reply writes hundreds, a load thousands. Writers do not keep
// the bytes (io.Writer's contract; OnFrame copies what it keeps).
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledFrame bounds the buffers kept for reuse: a frame carrying a
// whole file should not pin its size.
const maxPooledFrame = 64 << 10
