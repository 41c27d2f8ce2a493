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
