package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestLoginSignsInARunningServer is the editor's sign-in flow over real
// processes (issue 15 item 8): with no key the endpoint's 401 becomes
// auth_required; the terminal method runs `crow-acp login`, which refuses a
// key the endpoint rejects and saves a good one 0600; the running server
// then authenticates and prompts with it, without a restart.
func TestLoginSignsInARunningServer(t *testing.T) {
	bin := testBinary(t)
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	const goodKey = "sk-good-0123456789"
	model.RequireKey(goodKey)
	model.Enqueue(fakemodel.Reply{Text: "Signed in.", Chunks: 1})

	cfgHome := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
		"XDG_CONFIG_HOME": cfgHome, "CROW_MODEL": fakemodel.ModelID}
	p := startProc(t, bin, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true}}}}`)
	var init struct {
		Result struct {
			AuthMethods []struct {
				Type string   `json:"type"`
				ID   string   `json:"id"`
				Args []string `json:"args"`
			} `json:"authMethods"`
		} `json:"result"`
	}
	mustJSON(t, p.recv(10*time.Second), &init)
	if m := init.Result.AuthMethods; len(m) != 2 || m[0].Type != "terminal" || m[0].ID != "crow-login" || strings.Join(m[0].Args, " ") != "login" {
		t.Fatalf("authMethods = %+v, want the terminal method running `crow-acp login` first", m)
	}

	cwd := t.TempDir()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + quote(cwd) + `,"mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	mustJSON(t, p.until("1", 10*time.Second)[0], &created)
	prompt := func(id string) []byte {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":` + quote(created.Result.SessionID) + `,"prompt":[{"type":"text","text":"hi"}]}}`)
		frames := p.until(id, 10*time.Second)
		return frames[len(frames)-1]
	}
	if got := errorCode(t, prompt("2")); got != -32000 {
		t.Fatalf("prompt without a key: error code %d, want -32000 (auth_required)", got)
	}

	login := func(key string) (int, string) {
		cmd := exec.Command(bin, "login")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		cmd.Env = append(cmd.Env, environ(env)...)
		cmd.Stdin = strings.NewReader(key + "\n")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	credentials := filepath.Join(cfgHome, "crow-acp", "credentials")
	if code, out := login("sk-wrong-key"); code != exitError || !strings.Contains(out, "rejected") {
		t.Fatalf("login with a rejected key: exit %d, output %q; want exit 1 saying it was rejected", code, out)
	}
	if _, err := os.Stat(credentials); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rejected key was saved (stat: %v)", err)
	}
	if code, out := login(goodKey); code != exitOK {
		t.Fatalf("login: exit %d: %s", code, out)
	}
	st, err := os.Stat(credentials)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, mode %v; want 0600", err, st.Mode())
	}

	p.send(`{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"crow-api-key"}}`)
	if f := p.until("3", 10*time.Second); errorCode(t, f[len(f)-1]) != 0 {
		t.Fatalf("authenticate after login: %s", f[len(f)-1])
	}
	var done struct {
		Result struct {
			StopReason string `json:"stopReason"`
		} `json:"result"`
	}
	mustJSON(t, prompt("4"), &done)
	if done.Result.StopReason != "end_turn" {
		t.Fatal("the prompt after login did not complete")
	}
	h := model.Headers()
	if got := h[len(h)-1].Get("Authorization"); got != "Bearer "+goodKey {
		t.Fatalf("last model request sent Authorization %q, want the saved key", got)
	}
	p.close()
	if strings.Contains(p.logs(), goodKey) {
		t.Fatal("the key appears in the server's log")
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// errorCode is the frame's error code; 0 for a result.
func errorCode(t *testing.T, frame []byte) int {
	t.Helper()
	var f struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	mustJSON(t, frame, &f)
	if f.Error == nil {
		return 0
	}
	return f.Error.Code
}

// Issue 29 finding 4: twelve concurrent logins (one per provider, each its
// own key variable) kept 3 to 5 of the 12 keys: each read the file, added
// its key and renamed its copy over the others'. Under the lock all 12 stay.
func TestConcurrentLoginsKeepEveryKey(t *testing.T) {
	bin := testBinary(t)
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	cfgHome, dir := t.TempDir(), t.TempDir()
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		cfg := filepath.Join(dir, fmt.Sprintf("p%d.toml", i))
		body := fmt.Sprintf("[providers.p%d]\nbase_url = %q\napi_key_env = \"KEY_%d\"\n", i, model.URL(), i)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			cmd := exec.Command(bin, "login", "--config", cfg)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_CONFIG_HOME=" + cfgHome}
			cmd.Stdin = strings.NewReader(fmt.Sprintf("sk-login-%02d-0123456789\n", i))
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("login %d: %v: %s", i, err, out)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(cfgHome, "crow-acp", "credentials"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if want := fmt.Sprintf("KEY_%d=sk-login-%02d-0123456789\n", i, i); !strings.Contains(string(b), want) {
			t.Errorf("key %d lost; the file holds:\n%s", i, b)
		}
	}
}
