package persistence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// A message's text is stored once (issue 19): in the message_appended or
// message_updated record that brought it, whose Body then holds the text
// outside its JSON, compressed (textcodec.go), and not again in the
// message's row, which lists the records instead (Store reads them back
// with RecordText). The messages table stays a projection of the log:
// Event.Record gives the record's JSON back byte for byte.

// textPrefix starts the Body of a message record stored with its content
// outside its JSON. After it: the uvarint offset in the JSON where the
// content's string literal stood; the uvarint offset, in the JSON without
// it, where it stood again, plus one (0: nowhere; a prompt's parts are
// often its content); the uvarint of the record's contentFrom; the codec
// byte; the uvarint length of the text (not its JSON literal) and of the
// block that codes it; the block; and the JSON without the literal, as
// PackRecord stores a record.
const textPrefix = "\x00text\n"

// MinTextRecord is the shortest content stored outside its record's JSON,
// and so the shortest a message's row refers to instead of holding: below
// it the row's own text costs less than the reference.
const MinTextRecord = 256

// KeepsText reports whether content, a message's content as stored, can be
// kept only in its record: long enough to be worth it, and valid UTF-8,
// which a JSON record holds exactly (it would replace a stray byte).
func KeepsText(content string) bool {
	return len(content) >= MinTextRecord && utf8.ValidString(content)
}

// packTextRecord returns the Body of a message record (its JSON) with the
// content outside the JSON, or nil when the content is short, or not
// exactly what encoding/json writes of its text (the JSON must come back
// byte for byte: a run of frames may be packed against it).
func packTextRecord(record []byte) []byte {
	if len(record) < MinTextRecord {
		return nil
	}
	content := gjson.GetBytes(record, "content")
	if content.Type != gjson.String || content.Index <= 0 {
		return nil
	}
	at := content.Index
	literal := record[at : at+len(content.Raw)]
	text, ok := literalText(literal, content)
	if !ok || !KeepsText(text) {
		return nil
	}
	from := gjson.GetBytes(record, "contentFrom").Int() // 0 when omitted
	if from < 0 {
		return nil
	}
	codec, block := encodeText([]byte(text))
	rest := make([]byte, 0, len(record)-len(literal))
	rest = append(append(rest, record[:at]...), record[at+len(literal):]...)
	again := 0
	if i := bytes.Index(rest[at:], literal); i >= 0 {
		again = at + i + 1
		rest = append(rest[:at+i], rest[at+i+len(literal):]...)
	}
	b := make([]byte, 0, len(textPrefix)+1+5*binary.MaxVarintLen64+len(block)+len(rest))
	b = append(b, textPrefix...)
	b = binary.AppendUvarint(b, uint64(at))
	b = binary.AppendUvarint(b, uint64(again))
	b = binary.AppendUvarint(b, uint64(from))
	b = append(b, codec)
	b = binary.AppendUvarint(b, uint64(len(text)))
	b = binary.AppendUvarint(b, uint64(len(block)))
	b = append(b, block...)
	return append(b, PackRecord(rest)...)
}

// literalText returns the text of a JSON string literal (parsed: its
// gjson result) if encoding/json writes that text as exactly this literal,
// as Event.Record writes it back: a literal without what json.Marshal
// escapes is its text as it stands; any other is checked.
func literalText(literal []byte, parsed gjson.Result) (string, bool) {
	inner := literal[1 : len(literal)-1]
	if plainJSON(inner) {
		return string(inner), true
	}
	text := parsed.String()
	again, err := json.Marshal(text)
	return text, err == nil && bytes.Equal(again, literal)
}

// plainJSON reports whether json.Marshal writes b as it is inside its
// quotes: valid UTF-8 without control characters, quotes, backslashes,
// <, > and & (escaped for HTML), or U+2028 and U+2029.
func plainJSON(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return utf8.Valid(b) && !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029"))
}

// textRecord is a Body in packTextRecord's form, split.
type textRecord struct {
	at, again, from, n int
	codec              byte
	block              []byte // the text, coded
	rest               []byte // the JSON without the literal, as PackRecord stored it
}

var errTextRecord = errors.New("text record: corrupt")

// splitTextRecord splits body if it is in packTextRecord's form (ok),
// checking every length: the body comes from a database.
func splitTextRecord(body []byte) (r textRecord, ok bool, err error) {
	b, ok := bytes.CutPrefix(body, []byte(textPrefix))
	if !ok {
		return r, false, nil
	}
	var nums [5]uint64
	for i := range nums {
		if i == 3 { // the codec byte
			if len(b) == 0 {
				return r, true, errTextRecord
			}
			r.codec, b = b[0], b[1:]
		}
		v, k := binary.Uvarint(b)
		if k <= 0 || v > uint64(maxUnpacked) {
			return r, true, errTextRecord
		}
		nums[i], b = v, b[k:]
	}
	if nums[4] > uint64(len(b)) {
		return r, true, errTextRecord
	}
	r.at, r.again, r.from, r.n = int(nums[0]), int(nums[1]), int(nums[2]), int(nums[3])
	r.block, r.rest = b[:nums[4]], b[nums[4]:]
	return r, true, nil
}

// text decodes the record's content.
func (r textRecord) text() (string, error) { return decodeText(r.codec, r.n, r.block) }

// json gives back the record's JSON: the rest with the content's literal
// put back where it stood.
func (r textRecord) json() ([]byte, error) {
	t, err := r.text()
	if err != nil {
		return nil, err
	}
	rest, _, err := unpack(r.rest)
	if err != nil {
		return nil, err
	}
	literal, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if r.again > 0 { // where it stood again, after where it stood first
		if r.again-1 < r.at || r.again-1 > len(rest) {
			return nil, errTextRecord
		}
		rest = slices.Insert(slices.Clip(rest), r.again-1, literal...)
	}
	if r.at > len(rest) {
		return nil, errTextRecord
	}
	out := make([]byte, 0, len(rest)+len(literal))
	return append(append(append(out, rest[:r.at]...), literal...), rest[r.at:]...), nil
}

// RecordText returns the content a message record's Body holds and its
// contentFrom (MessageRecord): what a message's row refers to (see
// KeepsText). It decodes only the text of a record in packTextRecord's form,
// and the JSON of any other.
func RecordText(body []byte) (text string, from int, err error) {
	r, ok, err := splitTextRecord(body)
	if err != nil {
		return "", 0, err
	}
	if ok {
		t, err := r.text()
		if err != nil {
			return "", 0, err
		}
		return t, r.from, nil
	}
	b, _, err := unpack(body)
	if err != nil {
		return "", 0, err
	}
	var fields struct {
		Content     string `json:"content"`
		ContentFrom int    `json:"contentFrom"`
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		return "", 0, fmt.Errorf("message record: %w", err)
	}
	return fields.Content, fields.ContentFrom, nil
}

// TextOf is what RecordText returns of one body.
type TextOf struct {
	Text string
	From int
	Err  error
}

// RecordTexts is RecordText of each of bodies, the texts decoded into one
// allocation: a load decodes thousands of them, and an allocation each
// would cost about as much as decoding them.
func RecordTexts(bodies [][]byte) []TextOf {
	out := make([]TextOf, len(bodies))
	recs := make([]textRecord, len(bodies))
	total := 0
	for i, b := range bodies {
		r, ok, err := splitTextRecord(b)
		switch {
		case err != nil:
			out[i].Err = err
		case !ok: // a record's JSON
			out[i].Text, out[i].From, out[i].Err = RecordText(b)
		case r.n > maxUnpacked-total || !textFits(r.codec, r.n, r.block):
			out[i].Err = errTextRecord
		default:
			recs[i], total = r, total+r.n
			continue
		}
		recs[i].n = -1 // done
	}
	buf := make([]byte, 0, total)
	for i, r := range recs {
		if r.n < 0 {
			continue
		}
		dst := buf[len(buf) : len(buf) : len(buf)+r.n]
		if out[i].Text, out[i].Err = decodeTextInto(r.codec, r.n, r.block, dst); out[i].Err == nil {
			out[i].From = r.from
		}
		buf = buf[:len(buf)+r.n]
	}
	return out
}
