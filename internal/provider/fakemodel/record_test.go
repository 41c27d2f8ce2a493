package fakemodel

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestRecordReplays: a recorder in front of a second fake model (the
// "real" endpoint) passes the key upstream, keeps each answer as a Reply
// (stream or not, error or not) with no key in it, and the recorded
// replies, served again, answer like the endpoint did.
func TestRecordReplays(t *testing.T) {
	const key = "sk-or-test-key-0123456789abcdef"
	upstream := Start()
	defer upstream.Close()
	rules, err := ParseRules([]byte("openrouter-key " + key))
	if err != nil {
		t.Fatal(err)
	}
	upstream.SetRules(rules...)
	scripted := []Reply{
		{Text: "hello there world", Reasoning: "think first", Chunks: 3},
		{ToolCalls: []ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		{Text: "your key is " + key + " and another sk-abcdefghijklmnopqrstuvwx", Chunks: 1},
		{Text: "not streamed", Chunks: 1, Finish: "length"},
	}
	upstream.Enqueue(scripted...)

	rec, err := NewRecorder(upstream.URL())
	if err != nil {
		t.Fatal(err)
	}
	var written bytes.Buffer
	rec.OnReply = func(all []Reply) error {
		written.Reset()
		return WriteFixture(&written, "Recorded from a test endpoint.", all)
	}
	proxy := httptest.NewServer(rec)
	defer proxy.Close()

	post := func(auth string, stream bool) (int, string) {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var answers []string
	for i := range 3 {
		code, body := post(key, true)
		if code != 200 {
			t.Fatalf("request %d through the recorder: %d %s", i+1, code, body)
		}
		answers = append(answers, body)
	}
	if code, _ := post(key, false); code != 200 {
		t.Fatalf("non-streamed request: %d", code)
	}
	if code, body := post("", true); code != 401 || !strings.Contains(body, "No auth credentials found") {
		t.Fatalf("request without the key: %d %s, want the upstream's 401", code, body)
	}

	got := rec.Replies()
	want := []Reply{
		scripted[0], scripted[1],
		{Text: "your key is " + Redacted + " and another " + Redacted, Chunks: 1},
		{Text: "not streamed", Chunks: 1, Finish: "length"},
		{Status: 401, ErrorBody: `{"error":{"message":"No auth credentials found","code":401}}`},
	}
	for i := range got {
		got[i].Usage = nil // the upstream's estimate, kept but not compared
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded:\n%+v\nwant:\n%+v", got, want)
	}
	if strings.Contains(written.String(), key) || strings.Contains(written.String(), "sk-abcdefghijklmnop") || !strings.Contains(written.String(), "-- model --\n") {
		t.Fatalf("the fixture written holds a key or no model section:\n%s", written.String())
	}
	if rec.Err() != nil {
		t.Fatal(rec.Err())
	}

	// The recorded replies, parsed back from the fixture, answer as the
	// endpoint did.
	section := written.String()[strings.Index(written.String(), "-- model --\n")+len("-- model --\n"):]
	replies, err := ParseScript(strings.NewReader(section))
	if err != nil {
		t.Fatal(err)
	}
	replay := Start()
	defer replay.Close()
	replay.Enqueue(replies[:2]...)
	for i := range 2 {
		resp, err := http.Post(replay.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !sameStream(string(b), answers[i]) {
			t.Errorf("replayed answer %d differs:\n%s\nendpoint:\n%s", i+1, b, answers[i])
		}
	}
}

// sameStream compares two event streams without their usage chunks (the
// fake model estimates usage from the request).
func sameStream(a, b string) bool {
	strip := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, `"choices":[]`) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	return strip(a) == strip(b)
}

func TestRecorderRefusesBadUpstream(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "not a url", "http://"} {
		if _, err := NewRecorder(u); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

func FuzzRecordedReply(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1,\"id\":\"x\",\"function\":{\"name\":\"f\"}}]}}]}\n",
		"data: \x00\x01\x1b[31m\n", "data: \xff\xfe{}\n", `{"choices":[{"message":{"content":"a"}}]}`,
		"data: " + strings.Repeat("{", 100000) + "\n",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, stream bool) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		rep, ok := replyFrom(200, ct, []byte(body))
		if !ok {
			return
		}
		rep = redactReply(rep, map[string]bool{"sk-secret-key-1234": true})
		if strings.Contains(rep.Text+rep.Reasoning, "sk-secret-key-1234") {
			t.Fatal("secret left in the reply")
		}
	})
}
