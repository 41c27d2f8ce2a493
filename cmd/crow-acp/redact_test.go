package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// Issue 29 finding 6: an endpoint that echoes the API key in its reply
// got it streamed to the client, stored and exported. Known keys (the
// configured one, and another provider's in the credentials file) are
// replaced by [redacted] everywhere, also when a delta boundary splits
// them.
func TestEchoedKeyIsRedacted(t *testing.T) {
	bin := testBinary(t)
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
	p := startProc(t, bin, env)
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
		cmd := exec.Command(bin, append([]string{"sessions"}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, environ(env)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sessions %v: %v", args, err)
		}
		check("sessions "+strings.Join(args, " "), string(out))
	}
}
