package persistence

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
)

// dictPrefix starts a Body stored S2-compressed (klauspost/compress/s2)
// against bodyDict. A short record or frame (a prompt's request, a
// message's record, a response: 60 to 250 bytes, about ten of them a turn)
// is mostly the keys and the envelope every one of its kind repeats: no
// compressor finds them within one body, and DEFLATE's headers cost more
// than it saves below a few hundred bytes; against a dictionary that holds
// them they cost a few bytes each, and S2 encodes one in about a
// microsecond.
const dictPrefix = "\x00s\n"

// minDictBody is the shortest body tried against the dictionary: below
// it, the prefix and the copies cost what they save.
const minDictBody = 32

// bodyDict is the dictionary: the JSON crow-acp's records and the ACP
// frames it sends and receives repeat, the most frequent last (S2 copies
// from nearer cost fewer bytes). It never changes: bodies stored against
// it read back only with it (TestBodyDict pins it). A better one needs a
// prefix of its own, and this one kept for reading.
const bodyDict = `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}` +
	`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true}}` +
	`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` +
	`{"connectionId":"conn_","pid":` + `{"reason":"connection closed"}` +
	`{"manual":false,"model":"","ref":"cmp_` + `{"policies":"summarize","ref":"cmp_","tokens":` +
	`{"replay":{"bytes":,"crc32c":"","firstSeq":1,"frames":,"lastSeq":,"messages":},"sent":{"frames":,"crc32c":"","data":"` +
	`{"patches":[{"ids":[],"isActive":false,"compactedIntoId":` +
	`"sessionUpdate":"plan","entries":[{"content":"","priority":"medium","status":"pending"}]` +
	`"sessionUpdate":"usage_update","used":,"size":` +
	`"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compact","description":"` +
	`"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"` +
	`"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"` +
	`"sessionUpdate":"session_info_update","title":"","updatedAt":"20` +
	`{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"sess_","path":"/","line":1,"limit":` +
	`{"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{"sessionId":"sess_","command":"","args":[],"cwd":"/","outputByteLimit":` +
	`{"jsonrpc":"2.0","id":"p0","method":"session/request_permission","params":{"sessionId":"sess_","toolCall":{"toolCallId":"call_",` +
	`"options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"allow_always","name":"Always allow","kind":"allow_always"},` +
	`{"optionId":"reject_once","name":"Reject","kind":"reject_once"},{"optionId":"reject_always","name":"Always reject","kind":"reject_always"}]}}` +
	`{"jsonrpc":"2.0","id":"p0","result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}` +
	`"sessionUpdate":"tool_call","toolCallId":"call_","title":"","kind":"read","status":"pending","locations":[{"path":"/"}],"rawInput":{"path":"` +
	`"kind":"execute","rawInput":{"command":"` + `"kind":"edit","content":[{"type":"diff","path":"/","oldText":"","newText":"` +
	`"sessionUpdate":"tool_call_update","toolCallId":"call_","status":"completed","content":[{"type":"content","content":{"type":"text","text":"` +
	`"status":"failed","status":"in_progress",` +
	`{"id":1,"seq":1,"role":"tool","content":"","toolCallId":"call_","status":"complete","tokenCount":` +
	`"toolCalls":[{"id":"call_","name":"read_file","arguments":"{\"path\":\"` + `"reasoning":"","reasoningFrom":` +
	`{"stopReason":"cancelled"}{"stopReason":"end_turn"}{"requestId":` +
	`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}` +
	`{"id":3,"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"sess_","prompt":[{"type":"text","text":"` +
	`{"id":1,"seq":1,"role":"user","content":"","parts":[{"type":"text","text":""}],"status":"complete","tokenCount":1,"createdAt":"20` +
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"messageId":"msg_"}}}` +
	`{"id":2,"seq":2,"role":"assistant","content":"","status":"streaming","tokenCount":1,"createdAt":"20","isActive":true,"contentFrom":`

// bodyDictS2 is bodyDict as S2 reads it; safe for concurrent use.
var bodyDictS2 = sync.OnceValue(func() *s2.Dict { return s2.MakeDict([]byte(bodyDict), nil) })

// packDict returns body S2-compressed against bodyDict behind dictPrefix.
func packDict(body []byte) []byte {
	d := bodyDictS2()
	out := make([]byte, len(dictPrefix), len(dictPrefix)+s2.MaxEncodedLen(len(body)))
	copy(out, dictPrefix)
	enc := d.Encode(out[len(dictPrefix):cap(out)], body)
	return out[:len(dictPrefix)+len(enc)]
}

var errDictBody = errors.New("packed body: corrupt")

// unpackDict reverses packDict (packed: what follows the prefix), checking
// the length the block claims before making room for it: the body comes
// from a database.
func unpackDict(packed []byte) ([]byte, error) {
	n, err := s2.DecodedLen(packed)
	if err != nil {
		return nil, errDictBody
	}
	if n > maxUnpacked {
		return nil, fmt.Errorf("packed body: inflates to more than %d bytes", maxUnpacked)
	}
	out, err := bodyDictS2().Decode(make([]byte, 0, n), packed)
	if err != nil {
		return nil, errDictBody
	}
	return out, nil
}

// packSmall returns body against the dictionary when that is smaller,
// else nil.
func packSmall(body []byte) []byte {
	if len(body) < minDictBody {
		return nil
	}
	if p := packDict(body); len(p) < len(body) {
		return p
	}
	return nil
}
