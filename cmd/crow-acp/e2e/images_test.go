package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// pngOf is a PNG of n bytes: a real 1280x800 image followed by filler
// (what imagecheck reads is the header; the fake model never decodes it).
func pngOf(n int) string {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1280, 800))); err != nil {
		panic(err)
	}
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
	// What OpenAI reports for a request with an image (its tokens by its
	// size, not the base64's bytes/4, the fake's default estimate).
	usage := &fakemodel.Usage{PromptTokens: 3000, CompletionTokens: 10, TotalTokens: 3010}
	model.SetFallback(fakemodel.Reply{Text: "A screenshot.", Usage: usage})
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
	// read_file of a PNG (read inside the project: no permission asked):
	// the tool message names it, the image follows as a user message's
	// image part.
	shot := pngOf(200 << 10)
	raw, _ := base64.StdEncoding.DecodeString(shot)
	if err := os.WriteFile(filepath.Join(cwd, "shot.png"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"shot.png"}`}}, Usage: usage},
		fakemodel.Reply{Text: "A screenshot of the app.", Usage: usage})
	if res := s.call("session/prompt", `{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"Look at shot.png"}]}`); !strings.Contains(string(res[len(res)-1]), `"end_turn"`) {
		t.Fatalf("read_file prompt: %.300s", res[len(res)-1])
	}
	shotURL := `"url":"data:image/png;base64,` + shot + `"`
	reqs := model.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2]), shotURL) || !strings.Contains(string(reqs[2]), `shot.png is a PNG image, 200.0 KB, 1280×800 pixels`) {
		t.Fatalf("the request after read_file (%d requests) lacks the image or its description: %s", len(reqs), brief(reqs[len(reqs)-1]))
	}
	var body struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	mustJSON(t, reqs[2], &body)
	n := len(body.Messages)
	if n < 2 || body.Messages[n-2].Role != "tool" || body.Messages[n-1].Role != "user" || !strings.Contains(string(body.Messages[n-1].Content), shotURL) {
		t.Fatalf("the image does not follow the tool result as a user message: roles %+v", body.Messages)
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
	if images != 1 || users != 3 {
		t.Fatalf("load replayed %d user chunks, %d with the image; want the prompts' text and the image only (the refused ones not stored)", users, images)
	}
	if res := s.call("session/prompt", `{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"And now?"}]}`); !strings.Contains(string(res[len(res)-1]), `"end_turn"`) {
		t.Fatalf("prompt after load: %.300s", res[len(res)-1])
	}
	if reqs := model.Requests(); len(reqs) != 4 || !strings.Contains(string(reqs[3]), url) || !strings.Contains(string(reqs[3]), shotURL) {
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
	// Its read_file of the PNG tells the format, size and dimensions, and
	// that it cannot see it.
	model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "call_2", Name: "read_file", Arguments: `{"path":"shot.png"}`}}, Usage: usage},
		fakemodel.Reply{Text: "I cannot see it.", Usage: usage})
	s.call("session/prompt", `{"sessionId":`+quote(sid)+`,"prompt":[{"type":"text","text":"Look at shot.png"}]}`)
	reqs = model.Requests()
	if last := string(reqs[len(reqs)-1]); strings.Contains(last, "image_url") || !strings.Contains(last, "1280×800 pixels. The current model cannot see images") {
		t.Errorf("text-only model's read_file of a PNG: %.600s", last)
	}
	s.p.close()
}

// brief is a request's messages after the system prompt, base64 cut out.
func brief(req []byte) string {
	var body struct{ Messages []json.RawMessage }
	_ = json.Unmarshal(req, &body)
	var out []string
	for _, m := range body.Messages[min(1, len(body.Messages)):] {
		out = append(out, regexp.MustCompile(`[A-Za-z0-9+/]{200,}`).ReplaceAllString(string(m), "B64"))
	}
	return strings.Join(out, "\n")
}
