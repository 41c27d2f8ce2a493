package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp/acptest"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestLogoutSignsOut is the editor's sign-out over a real process: with
// the key `crow-acp login` saved, auth/status says authenticated; logout
// removes that key from the credentials file (the other keys stay), so
// auth/status says unauthenticated and the next prompt goes without a key
// and gets auth_required. Every frame is valid against the SDK 2.4 schema.
func TestLogoutSignsOut(t *testing.T) {
	bin := testBinary(t)
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
	p := startProc(t, bin, map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": filepath.Join(t.TempDir(), "crow.db"),
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
