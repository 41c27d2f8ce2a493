package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func TestRunServesScriptUntilStdinEOF(t *testing.T) {
	script := filepath.Join(t.TempDir(), "replies.jsonl")
	if err := os.WriteFile(script, []byte("# demo\n{\"text\":\"scripted\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-script", script, "-fallback-text", "later", "-stdin-eof"}, stdinR, stdoutW)
		stdoutW.Close()
	}()

	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("base URL %q", base)
	}
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()

	for _, want := range []string{"scripted", "later"} {
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != want {
			t.Fatalf("reply %+v (%v), want %q", c, err, want)
		}
	}

	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not exit on stdin EOF")
	}
}

func TestRunRefusesNonLoopback(t *testing.T) {
	err := run([]string{"-addr", "0.0.0.0:0"}, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("err %v", err)
	}
}

func TestRunBadScript(t *testing.T) {
	script := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(script, []byte("{\"txet\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-script", script}, strings.NewReader(""), io.Discard); err == nil {
		t.Fatal("bad script accepted")
	}
}

// TestRecordWritesFixture: record proxies to an endpoint (here a second
// fake model on 127.0.0.1), passes the key, and leaves a fixture file with
// the replies and no key once stdin ends.
func TestRecordWritesFixture(t *testing.T) {
	const key = "sk-live-0123456789abcdefghij"
	upstream := fakemodel.Start()
	defer upstream.Close()
	rules, _ := fakemodel.ParseRules([]byte("openrouter-key " + key))
	upstream.SetRules(rules...)
	upstream.Enqueue(fakemodel.Reply{Text: "recorded answer", Chunks: 1})
	out := filepath.Join(t.TempDir(), "session.txtar")

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"record", "-upstream", upstream.URL(), "-out", out, "-stdin-eof"}, stdinR, stdoutW)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSpace(line)+"/chat/completions", strings.NewReader(`{"model":"x","stream":true,"messages":[{"role":"user","content":"secret prompt"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "recorded answer") {
		t.Fatalf("through the recorder: %d %s", resp.StatusCode, body)
	}
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("record did not exit at stdin EOF")
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(written)
	section, ok := strings.CutPrefix(text[strings.Index(text, "-- model --\n"):], "-- model --\n")
	if !ok || strings.Contains(text, key) || strings.Contains(text, "secret prompt") {
		t.Fatalf("fixture:\n%s", text)
	}
	replies, err := fakemodel.ParseScript(strings.NewReader(section))
	if err != nil || len(replies) != 1 || replies[0].Text != "recorded answer" {
		t.Fatalf("replies %+v (%v)", replies, err)
	}
}
