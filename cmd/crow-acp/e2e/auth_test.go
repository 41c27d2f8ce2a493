package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestLoginSignsInARunningServer is the editor's sign-in flow over real
// processes (issue 15 item 8): with no key the endpoint's 401 becomes
// auth_required; the terminal method runs `crow-acp login`, which refuses a
// key the endpoint rejects and saves a good one 0600; the running server
// then authenticates and prompts with it, without a restart.
func TestLoginSignsInARunningServer(t *testing.T) {
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	const goodKey = "sk-good-0123456789"
	model.RequireKey(goodKey)
	model.Enqueue(fakemodel.Reply{Text: "Signed in.", Chunks: 1})

	cfgHome := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
		"XDG_CONFIG_HOME": cfgHome, "CROW_MODEL": fakemodel.ModelID}
	p := startProc(t, env)
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
		cmd := command(t, env, "login")
		cmd.Stdin = strings.NewReader(key + "\n")
		code, out, errs := runCmd(t, cmd)
		return code, out + errs
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

// Issue 29 finding 4: twelve concurrent logins (one per provider, each its
// own key variable) kept 3 to 5 of the 12 keys: each read the file, added
// its key and renamed its copy over the others'. Under the lock all 12 stay.
func TestConcurrentLoginsKeepEveryKey(t *testing.T) {
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
		cmd := command(t, map[string]string{"HOME": dir, "XDG_CONFIG_HOME": cfgHome}, "login", "--config", cfg)
		go func() {
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

// TestLogoutSignsOut is the editor's sign-out over a real process: with
// the key `crow-acp login` saved, auth/status says authenticated; logout
// removes that key from the credentials file (the other keys stay), so
// auth/status says unauthenticated and the next prompt goes without a key
// and gets auth_required. Every frame is valid against the SDK 2.4 schema.
func TestLogoutSignsOut(t *testing.T) {
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	const key = "sk-saved-0123456789"
	model.RequireKey(key)
	model.Enqueue(fakemodel.Reply{Text: "Signed in.", Chunks: 1})

	cfgHome := t.TempDir()
	credentials := filepath.Join(cfgHome, "crow-acp", "credentials")
	for k, v := range map[string]string{"OPENAI_API_KEY": key, "OTHER_API_KEY": "sk-other"} {
		if err := config.SaveCredential(credentials, k, v); err != nil {
			t.Fatal(err)
		}
	}
	p := startProc(t, map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
		"XDG_CONFIG_HOME": cfgHome, "CROW_MODEL": fakemodel.ModelID})
	v := acptest.MustValidatorFor(t, "sdk-2.4.0/v1/schema.unstable.json")
	methods := map[string]string{}
	call := func(id, method, params string) []byte {
		t.Helper()
		methods[id] = method
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
		frames := p.until(id, 10*time.Second)
		for _, f := range frames {
			if err := v.ValidateAgentFrame(f, func(raw json.RawMessage) string { return methods[string(raw)] }); err != nil {
				t.Errorf("%s: %v", method, err)
			}
		}
		return frames[len(frames)-1]
	}
	state := func(id string) string {
		var res struct {
			Result struct {
				State string `json:"state"`
			} `json:"result"`
		}
		mustJSON(t, call(id, "auth/status", `{}`), &res)
		return res.Result.State
	}

	call("0", "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	if got := state("1"); got != "authenticated" {
		t.Fatalf("auth/status with the saved key: %s", got)
	}
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	mustJSON(t, call("2", "session/new", `{"cwd":`+quote(t.TempDir())+`,"mcpServers":[]}`), &created)
	prompt := `{"sessionId":` + quote(created.Result.SessionID) + `,"prompt":[{"type":"text","text":"hi"}]}`
	if code := errorCode(t, call("3", "session/prompt", prompt)); code != 0 {
		t.Fatalf("prompt with the saved key: error %d", code)
	}
	if f := call("4", "logout", `{}`); errorCode(t, f) != 0 || !strings.Contains(string(f), `"result":{}`) {
		t.Fatalf("logout: %s", f)
	}
	data, err := os.ReadFile(credentials)
	if err != nil || strings.Contains(string(data), key) || !strings.Contains(string(data), "OTHER_API_KEY=sk-other") {
		t.Fatalf("credentials after logout: %q, %v; want the other key only", data, err)
	}
	if got := state("5"); got != "unauthenticated" {
		t.Fatalf("auth/status after logout: %s", got)
	}
	if code := errorCode(t, call("6", "session/prompt", prompt)); code != -32000 {
		t.Fatalf("prompt after logout: error %d, want -32000 (auth_required)", code)
	}
	h := model.Headers()
	if got := h[len(h)-1].Get("Authorization"); strings.Contains(got, key) {
		t.Fatalf("the request after logout still sent the key: %q", got)
	}
	p.close()
	if strings.Contains(p.logs(), key) {
		t.Fatal("the key appears in the server's log")
	}
}

// Issue 29 finding 6: an endpoint that echoes the API key in its reply
// got it streamed to the client, stored and exported. Known keys (the
// configured one, and another provider's in the credentials file) are
// replaced by [redacted] everywhere, also when a delta boundary splits
// them.
func TestEchoedKeyIsRedacted(t *testing.T) {
	const key, other = "sk-echo-secret-0123456789", "sk-other-provider-9876543210"
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	model.Enqueue(fakemodel.Reply{
		Text:      "Your key is " + key + ", and the saved one is " + other + ".",
		Reasoning: "The header said Bearer " + key,
		Chunks:    9, // boundaries fall inside the keys
	})
	cfgHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfgHome, "crow-acp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "crow-acp", "credentials"), []byte("OTHER_API_KEY="+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": key, "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
		"XDG_CONFIG_HOME": cfgHome, "CROW_MODEL": fakemodel.ModelID}
	p := startProc(t, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	p.recv(10 * time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + quote(t.TempDir()) + `,"mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	mustJSON(t, p.until("1", 10*time.Second)[0], &created)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":` + quote(created.Result.SessionID) + `,"prompt":[{"type":"text","text":"hi"}]}}`)
	var streamed strings.Builder
	for _, f := range p.until("2", 10*time.Second) {
		var n struct {
			Params struct {
				Update struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		mustJSON(t, f, &n)
		streamed.WriteString(n.Params.Update.Content.Text)
	}
	p.close()
	check := func(what, text string) {
		t.Helper()
		for _, k := range []string{key, other, key[:12], other[:12]} {
			if strings.Contains(text, k) {
				t.Errorf("%s holds %q:\n%s", what, k, text)
			}
		}
		if strings.Count(text, "[redacted]") < 2 {
			t.Errorf("%s does not say [redacted]:\n%s", what, text)
		}
	}
	check("the streamed chunks", streamed.String())
	if !strings.Contains(streamed.String(), "Your key is [redacted], and the saved one is [redacted].") {
		t.Errorf("streamed text lost or changed more than the keys: %q", streamed.String())
	}
	for _, args := range [][]string{{"show", created.Result.SessionID}, {"export", created.Result.SessionID, "--format", "json"}, {"export", created.Result.SessionID}} {
		out := mustRun(t, env, append([]string{"sessions"}, args...)...)
		check("sessions "+strings.Join(args, " "), out)
	}
}
