package persistence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"
)

// A message's text is stored once (issue 19): in the message_appended or
// message_updated record that brought it, whose Body then holds the text
// outside its JSON, and not again in the message's row, which lists the
// records instead (Store reads them back with RecordText). The messages
// table stays a projection of the log: Event.Record gives the record's
// JSON back byte for byte.
//
// The text is compressed with S2 (Snappy's successor): every load reads all
// of a session's text, and S2 decodes at about 1 GB/s where DEFLATE, which
// keeps about a fifth less, inflates at a fifth of that here.

// textPrefix starts the Body of a message record stored with its content
// outside its JSON. After it: the uvarint offset in the JSON where the
// content's string literal stood; the uvarint of the record's contentFrom;
// the uvarint length of the S2 block of the content (its text, not its
// JSON literal); the block; and the JSON without the literal, as PackRecord
// stores a record.
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

// contentKey is how a MessageRecord's JSON names its content: the first
// occurrence is the field (id, seq and role come before it, and a string
// escapes its quotes).
var contentKey = []byte(`"content":`)

// packTextRecord returns the Body of a message record (its JSON) with the
// content outside the JSON, or nil when the content is short, or not
// exactly what encoding/json writes of its text (the JSON must come back
// byte for byte: a run of frames may be packed against it).
func packTextRecord(record []byte) []byte {
	at := bytes.Index(record, contentKey)
	if at < 0 || len(record) < MinTextRecord {
		return nil
	}
	at += len(contentKey)
	var fields struct {
		Content     string `json:"content"`
		ContentFrom int    `json:"contentFrom"`
	}
	if err := json.Unmarshal(record, &fields); err != nil || !KeepsText(fields.Content) || fields.ContentFrom < 0 {
		return nil
	}
	literal, err := json.Marshal(fields.Content)
	if err != nil || !bytes.HasPrefix(record[at:], literal) {
		return nil
	}
	block := s2.EncodeBetter(nil, []byte(fields.Content))
	rest := make([]byte, 0, len(record)-len(literal))
	rest = append(append(rest, record[:at]...), record[at+len(literal):]...)
	b := make([]byte, 0, len(textPrefix)+3*binary.MaxVarintLen64+len(block)+len(rest))
	b = append(b, textPrefix...)
	b = binary.AppendUvarint(b, uint64(at))
	b = binary.AppendUvarint(b, uint64(fields.ContentFrom))
	b = binary.AppendUvarint(b, uint64(len(block)))
	b = append(b, block...)
	return append(b, PackRecord(rest)...)
}

// textRecord is a Body in packTextRecord's form, split.
type textRecord struct {
	at, from int
	block    []byte // S2
	rest     []byte // the JSON without the literal, as PackRecord stored it
}

var errTextRecord = errors.New("text record: corrupt")

// splitTextRecord splits body if it is in packTextRecord's form (ok),
// checking every length: the body comes from a database.
func splitTextRecord(body []byte) (r textRecord, ok bool, err error) {
	b, ok := bytes.CutPrefix(body, []byte(textPrefix))
	if !ok {
		return r, false, nil
	}
	var nums [3]uint64
	for i := range nums {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > uint64(maxUnpacked) {
			return r, true, errTextRecord
		}
		nums[i], b = v, b[k:]
	}
	if nums[2] > uint64(len(b)) {
		return r, true, errTextRecord
	}
	r = textRecord{at: int(nums[0]), from: int(nums[1]), block: b[:nums[2]], rest: b[nums[2]:]}
	return r, true, nil
}

// text decodes the record's content.
func (r textRecord) text() ([]byte, error) {
	n, err := s2.DecodedLen(r.block)
	if err != nil || n > maxUnpacked {
		return nil, errTextRecord
	}
	t, err := s2.Decode(make([]byte, n), r.block)
	if err != nil {
		return nil, errTextRecord
	}
	return t, nil
}

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
	if r.at > len(rest) {
		return nil, errTextRecord
	}
	literal, err := json.Marshal(string(t))
	if err != nil {
		return nil, err
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
		return string(t), r.from, err
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

// ApplyText is the text a record's content (RecordText) makes of prev, the
// text of the records before it.
func ApplyText(prev, text string, from int) (string, error) {
	return applyAppended(prev, text, from)
}

// AppendedText is what an update from prev to next records as its content
// and contentFrom (UpdateRecord).
func AppendedText(prev, next string) (string, int) { return appended(prev, next) }
