package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentProc is the real crow-acp binary driven line by line over real
// pipes, for tests that need the raw bytes or a kill -9.
type agentProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *strings.Builder
	mu     sync.Mutex
	waited chan error
}

func startProc(t testing.TB, bin string, env map[string]string) *agentProc {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Env = append(cmd.Env, environ(env)...)
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &agentProc{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 4096), stderr: &strings.Builder{}, waited: make(chan error, 1)}
	cmd.Stderr = lockedWriter{&p.mu, p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		p.waited <- cmd.Wait()
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *agentProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// recv returns the next frame, failing after timeout.
func (p *agentProc) recv(timeout time.Duration) []byte {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("agent exited; stderr:\n%s", p.logs())
		}
		return l
	case <-time.After(timeout):
		p.t.Fatalf("no frame within %s; stderr:\n%s", timeout, p.logs())
	}
	return nil
}

// until reads frames until one is the response with this id (as JSON
// text), returning every frame read.
func (p *agentProc) until(id string, timeout time.Duration) [][]byte {
	p.t.Helper()
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for {
		f := p.recv(time.Until(deadline))
		got = append(got, f)
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(f, &env) == nil && env.Method == "" && string(env.ID) == id {
			return got
		}
	}
}

func (p *agentProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// close ends stdin and waits for a clean exit.
func (p *agentProc) close() {
	p.t.Helper()
	p.stdin.Close()
	for range p.lines {
	}
	select {
	case err := <-p.waited:
		if err != nil {
			p.t.Fatalf("agent exit: %v; stderr:\n%s", err, p.logs())
		}
	case <-time.After(10 * time.Second):
		p.t.Fatal("agent did not exit")
	}
}

// kill sends SIGKILL and reaps the process.
func (p *agentProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	for range p.lines {
	}
}

// sessionIDOf is the sessionId of the session/new response that ends
// frames.
func sessionIDOf(t testing.TB, frames [][]byte) string {
	t.Helper()
	var r struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &r); err != nil || r.Result.SessionID == "" {
		t.Fatalf("session/new: %s", frames[len(frames)-1])
	}
	return r.Result.SessionID
}
