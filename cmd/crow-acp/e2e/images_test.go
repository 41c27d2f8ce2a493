package e2e

import (
	"bytes"
	"encoding/base64"
	be "encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// pngOf is a PNG of n bytes: the signature, an IHDR of 1280x800 and
// filler (what imagecheck reads is the header; the model never decodes
// the fake's image).
func pngOf(n int) string {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	_ = be.Write(&b, be.BigEndian, [2]uint32{1280, 800})
	b.Write([]byte{8, 6, 0, 0, 0, 0, 0, 0, 0})
	for i := 0; b.Len() < n; i++ {
		b.WriteByte(byte(i * 7))
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// acpSession sends requests over p and checks every frame the agent writes
// against the ACP schema.
type acpSession struct {
	t       *testing.T
	p       *proc
	v       *acptest.Validator
	methods map[string]string
	next    int
}

// call sends a request and returns the frames up to its response (the
// last).
func (s *acpSession) call(method, params string) [][]byte {
	s.t.Helper()
	s.next++
	id := strconv.Itoa(s.next)
	s.methods[id] = method
	s.p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	frames := s.p.until(id, 30*time.Second)
	for _, f := range frames {
		if err := s.v.ValidateAgentFrame(f, func(raw json.RawMessage) string { return s.methods[string(raw)] }); err != nil {
			s.t.Errorf("%s: %v", method, err)
		}
	}
	return frames
}

func startSession(t *testing.T, env map[string]string) *acpSession {
	s := &acpSession{t: t, p: startProc(t, env), v: acptest.MustValidator(t), methods: map[string]string{}}
	return s
}

// TestImagesBinary: with gpt-4o as the model and nothing configured about
// images, initialize advertises them; a 3 MB PNG prompt is accepted (over
// the 1 MiB text limit), reaches the model as an image part, is replayed
// by session/load in a new process and sent again in the rebuilt request.
// Broken base64, a MIME type the bytes belie and an oversize image get
// -32602 with what is wrong, and nothing is stored; a text-only model's
// refusal names the images setting.
func TestImagesBinary(t *testing.T) {
	model, _, env, cwd := procSetup(t)
	env["CROW_MODEL"] = "gpt-4o"
	env["CROW_MAX_IMAGE_BYTES"] = strconv.Itoa(4 << 20)
	model.SetFallback(fakemodel.Reply{Text: "A screenshot."})
	img := pngOf(3 << 20)

	s := startSession(t, env)
	init := s.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	if !strings.Contains(string(init[len(init)-1]), `"image":true`) {
		t.Fatalf("initialize with gpt-4o does not advertise images: %s", init[len(init)-1])
	}
	sid := sessionIDOf(t, s.call("session/new", `{"cwd":`+quote(cwd)+`,"mcpServers":[]}`))
	prompt := func(s *acpSession, mime, data string) []byte {
		frames := s.call("session/prompt", `{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"What is this?"},{"type":"image","mimeType":`+quote(mime)+`,"data":`+quote(data)+`}]}`)
		return frames[len(frames)-1]
	}
	if res := prompt(s, "image/png", img); !strings.Contains(string(res), `"end_turn"`) {
		t.Fatalf("3 MB PNG prompt: %.300s", res)
	}
	url := `"url":"data:image/png;base64,` + img + `"`
	if reqs := model.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0]), url) {
		t.Fatalf("the model got %d requests, the first without the image part", len(reqs))
	}
	for _, c := range []struct{ mime, data, problem string }{
		{"image/png", img[:1000] + "!" + img[1001:], "base64"},
		{"image/jpeg", img, "mismatch"},
		{"image/png", pngOf(5 << 20), "too_large"},
	} {
		res := prompt(s, c.mime, c.data)
		var e struct {
			Error struct {
				Code int
				Data struct{ Problem string }
			}
		}
		mustJSON(t, res, &e)
		if e.Error.Code != -32602 || e.Error.Data.Problem != c.problem {
			t.Errorf("%s image: %.300s; want -32602 %s", c.problem, res, c.problem)
		}
	}
	s.p.close()

	// A new process replays the image and sends it again.
	s = startSession(t, env)
	s.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	loaded := s.call("session/load", `{"sessionId":`+quote(sid)+`,"cwd":`+quote(cwd)+`,"mcpServers":[]}`)
	images, users := 0, 0
	for _, f := range loaded {
		if strings.Contains(string(f), `"user_message_chunk"`) {
			users++
			if strings.Contains(string(f), `"data":"`+img+`"`) {
				images++
			}
		}
	}
	if images != 1 || users != 2 {
		t.Fatalf("load replayed %d user chunks, %d with the image; want the prompt's text and image only (the refused ones not stored)", users, images)
	}
	if res := s.call("session/prompt", `{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"And now?"}]}`); !strings.Contains(string(res[len(res)-1]), `"end_turn"`) {
		t.Fatalf("prompt after load: %.300s", res[len(res)-1])
	}
	if reqs := model.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1]), url) {
		t.Fatalf("the rebuilt request (%d requests) does not carry the image", len(reqs))
	}
	s.p.close()

	// A text-only model: the refusal names the setting.
	env["CROW_MODEL"] = "deepseek-chat"
	s = startSession(t, env)
	init = s.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	if !strings.Contains(string(init[len(init)-1]), `"image":false`) {
		t.Errorf("initialize with deepseek-chat advertises images: %s", init[len(init)-1])
	}
	sid = sessionIDOf(t, s.call("session/new", `{"cwd":`+quote(cwd)+`,"mcpServers":[]}`))
	res := prompt(s, "image/png", img)
	if !strings.Contains(string(res), `-32602`) || !strings.Contains(string(res), "images = true") || !strings.Contains(string(res), "deepseek-chat") {
		t.Errorf("text-only model's refusal: %.400s", res)
	}
	s.p.close()
}
