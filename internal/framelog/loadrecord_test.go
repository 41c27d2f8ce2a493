package framelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// TestOldLoadEventsStillRead: a database written before loads kept their
// frames in session_loaded (request, response and the updates after it as
// frame events, the response and updates packed; a session_loaded record
// without "sent") reads back frame for frame, with a new-style load after
// it.
func TestOldLoadEventsStillRead(t *testing.T) {
	h := newHarness(t, Options{ConnectionID: "conn_new"}, "sess_a")
	old := newLoadFrames("sess_a")(1)
	ev := func(kind persistence.EventKind, dir persistence.Direction, method string, body []byte) *persistence.Event {
		return &persistence.Event{Stream: "sess_a", ConnectionID: "conn_old", Kind: kind, Direction: dir, Method: method, Body: body}
	}
	if err := h.store.AppendEvents(h.ctx,
		ev(persistence.EventRequest, persistence.DirIn, "session/load", []byte(old[0])),
		ev(persistence.EventResponse, persistence.DirOut, "session/load", persistence.PackRun([]byte(old[1]))),
		ev(persistence.EventSessionLoaded, "", "", []byte(`{"connectionId":"conn_old","pid":7,"replay":{"bytes":10,"crc32c":"00000000","frames":1},"via":"session/load"}`)),
		ev(persistence.EventNotification, persistence.DirOut, "session/update", persistence.PackRun([]byte(strings.Join(old[2:], "\n")))),
	); err != nil {
		t.Fatal(err)
	}
	h.kept = old
	newer := newLoadFrames("sess_a")(2)
	h.keep(acp.Inbound, newer[0])
	h.keep(acp.Outbound, newer[1:]...)
	h.j.Record(h.ctx, "sess_a", persistence.EventSessionLoaded, map[string]any{"messages": 0})
	h.checkKept("sess_a")
}

// TestLoadRecordRoundTrip: frames come back byte for byte whether stored
// whole, packed or as differences from a base, with control characters,
// invalid UTF-8 and frames that share nothing with their base.
func TestLoadRecordRoundTrip(t *testing.T) {
	in, out := persistence.DirIn, persistence.DirOut
	base := []loadFrame{{in, []byte(`{"id":1,"method":"session/load","params":{"cwd":"/tmp/\u0001"}}`)}, {out, []byte(`{"id":1,"result":{"x":"` + strings.Repeat("é\x01", 300) + `"}}`)}}
	cases := [][]loadFrame{
		nil,
		{{in, []byte(`{"id":22,"method":"session/load","params":{"cwd":"/tmp/\u0001"}}`)}, {out, []byte(`{"id":22,"result":{"x":"` + strings.Repeat("é\x01", 300) + `"}}`)}},
		{{out, []byte("\xff\xfe not utf-8 \x00")}, {in, []byte(strings.Repeat("{}", 5000))}, {out, nil}},
		{{in, []byte(`{"id":1,"method":"session/load","params":{"cwd":"/tmp/\u0001"}}`)}, {out, []byte(`{"id":1`)}}, // a prefix of its base
	}
	for i, frames := range cases {
		for _, b := range [][]loadFrame{nil, base} {
			data := encodeLoad(frames, b)
			got, err := decodeLoad(data, b, persistence.NewBudget(persistence.MaxDecoded))
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			if len(got) != len(frames) {
				t.Fatalf("case %d: %d frames back, want %d", i, len(got), len(frames))
			}
			for k := range frames {
				if got[k].dir != frames[k].dir || !bytes.Equal(got[k].body, frames[k].body) {
					t.Fatalf("case %d frame %d: back %s %q, want %s %q", i, k, got[k].dir, got[k].body, frames[k].dir, frames[k].body)
				}
			}
		}
	}
	if d := encodeLoad(cases[1], base); len(d) > 20 {
		t.Errorf("a load differing from its base by the request id takes %d bytes: %q", len(d), d)
	}
}

// TestDamagedLoadRecordIsReported: a load record whose base is missing,
// whose data is cut or whose checksum does not match is an error that
// names the event, never frames made up.
func TestDamagedLoadRecordIsReported(t *testing.T) {
	frames := []loadFrame{{persistence.DirIn, []byte(`{"id":1}`)}, {persistence.DirOut, []byte(`{"id":1,"result":{}}`)}}
	body := func(s sentRecord) []byte {
		b, _ := json.Marshal(map[string]any{"via": "session/load", "sent": s})
		return b
	}
	good := sentRecord{Frames: 2, CRC32C: loadSum(frames), Data: encodeLoad(frames, nil)}
	for name, b := range map[string][]byte{
		"missing base": body(sentRecord{Frames: 2, CRC32C: good.CRC32C, Base: "0badbeef", Data: good.Data}),
		"cut data":     body(sentRecord{Frames: 2, CRC32C: good.CRC32C, Data: good.Data[:len(good.Data)-3]}),
		"checksum":     body(sentRecord{Frames: 2, CRC32C: "00000000", Data: good.Data}),
		"frame count":  body(sentRecord{Frames: 3, CRC32C: good.CRC32C, Data: good.Data}),
		"not json":     []byte("\x00\xff{"),
	} {
		_, err := Frames([]persistence.Event{{Seq: 4, Kind: persistence.EventSessionLoaded, Body: b}})
		if !errors.Is(err, errLoadRecord) || !strings.Contains(err.Error(), "event 4") {
			t.Errorf("%s: error %v, want a damaged load record at event 4", name, err)
		}
	}
	if fs, err := Frames([]persistence.Event{{Seq: 4, Kind: persistence.EventSessionLoaded, Body: body(good)}}); err != nil || len(fs) != 2 {
		t.Errorf("the good record: %d frames, %v", len(fs), err)
	}
}

// FuzzLoadRecord: decoding any bytes as a load record (against a base)
// never panics and never returns more than maxLoadBytes; encoding any
// frames and decoding them gives them back.
func FuzzLoadRecord(f *testing.F) {
	base := []loadFrame{{persistence.DirIn, []byte(`{"jsonrpc":"2.0","id":1,"method":"session/load"}`)}, {persistence.DirOut, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}}
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/load"}`), []byte("il\x02{}"))
	f.Add([]byte("\x00\x01\x1b[31m\r\t"), []byte("od\x00\x05\x05\x01x"))
	f.Add([]byte("\xff\xfe\xc3\x28 invalid utf-8"), []byte("z\x00\x00\x00\xff\xff"))
	f.Add(bytes.Repeat([]byte(`{"a":"b"}`), 20000), []byte("il\xff\xff\xff\xff\x0f"))
	f.Add([]byte{}, []byte("od\x01\x00\x00\xff\xff\xff\xff\x0f"))
	f.Add([]byte(`{"via":"session/load","sent":{"frames":1,"crc32c":"00000000","data":"aWwCe30="}}`), []byte(`{"sent":{"base":"x","data":"!!"}}`))
	f.Fuzz(func(t *testing.T, frame, data []byte) {
		// Any body of a session_loaded event: an error or frames, never
		// a panic.
		for _, body := range [][]byte{frame, data} {
			_, _ = Frames([]persistence.Event{{Seq: 1, Kind: persistence.EventSessionLoaded, Body: body}})
		}
		if got, err := decodeLoad(data, base, persistence.NewBudget(1<<20)); err == nil {
			n := 0
			for _, g := range got {
				n += len(g.body)
			}
			if n > maxLoadBytes {
				t.Fatalf("decoded %d bytes", n)
			}
		}
		if bytes.IndexByte(frame, '\n') >= 0 {
			return
		}
		frames := []loadFrame{{persistence.DirIn, frame}, {persistence.DirOut, append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), frame...)}}
		got, err := decodeLoad(encodeLoad(frames, base), base, persistence.NewBudget(persistence.MaxDecoded))
		if err != nil || len(got) != 2 || !bytes.Equal(got[0].body, frames[0].body) || !bytes.Equal(got[1].body, frames[1].body) {
			t.Fatalf("round trip of %q: %v", frame, err)
		}
	})
}
