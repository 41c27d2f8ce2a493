package framelog

import (
	"encoding/json"
	"testing"
)

// The fast path must attribute exactly as the full parse does, and refuse
// whatever it cannot read safely.
func TestSessionUpdateFastPathMatchesFullParse(t *testing.T) {
	frames := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_ab12","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi \"there\""}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_x","update":{"sessionUpdate":"plan","entries":[]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_\"q","update":{}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_x","update":{}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_x"}}`,
		`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"sess_x","update":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"sess_x","update":{}}}`,
		`{"method":"session/update","jsonrpc":"2.0","params":{"sessionId":"sess_x","update":{}}}`,
	}
	accepted := 0
	for _, f := range frames {
		sid, ok := sessionUpdateSession([]byte(f), false)
		if !ok {
			continue
		}
		accepted++
		var env envelope
		var p sessionParams
		if err := json.Unmarshal([]byte(f), &env); err != nil {
			t.Fatalf("fast path accepted invalid JSON %s", f)
		}
		_ = json.Unmarshal(env.Params, &p)
		if env.Method != "session/update" || len(env.ID) > 0 || p.SessionID != sid {
			t.Errorf("fast path read %q from %s; full parse: method %q id %s session %q", sid, f, env.Method, env.ID, p.SessionID)
		}
	}
	if accepted != 2 {
		t.Errorf("fast path accepted %d canonical frames, want 2", accepted)
	}
}

// A frame crow-acp wrote skips the validity scan but is attributed the same
// way; a client's frame with the same bytes is still checked.
func TestSessionUpdateFastPathOurFrames(t *testing.T) {
	good := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_ab12","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	for _, ours := range []bool{true, false} {
		if sid, ok := sessionUpdateSession(good, ours); !ok || sid != "sess_ab12" {
			t.Errorf("ours=%v: %q %v", ours, sid, ok)
		}
	}
	cut := good[:len(good)-3]
	if _, ok := sessionUpdateSession(cut, false); ok {
		t.Error("a client's truncated frame took the fast path")
	}
	if sid, ok := sessionUpdateSession(cut, true); !ok || sid != "sess_ab12" {
		t.Errorf("our frame: %q %v", sid, ok)
	}
}
