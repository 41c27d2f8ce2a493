package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// sdkScenario is one script of testdata/sdkclient run by the official
// TypeScript SDK client against the real binary.
type sdkScenario struct {
	script string
	model  string            // the fake model's replies, one JSON object a line (fakemodel.Reply)
	env    map[string]string // on top of sdkEnv
	files  map[string]string // written under the work directory first
	// check looks at the model requests after the script passed.
	check func(t *testing.T, requests []json.RawMessage)
}

var sdkScenarios = map[string]sdkScenario{
	"meta": {script: "meta.mjs", model: `{"text":"Sure.","chunks":1}`,
		env: map[string]string{"CROW_MODELS": "gpt-4o-mini;window=8192", "CROW_MODEL": "gpt-4o-mini"}},
	"fork": {script: "fork.mjs", model: `{"text":"Noted: kiwi.","chunks":1}
{"text":"The word was kiwi.","chunks":1}
{"text":"The source goes on.","chunks":1}`,
		check: func(t *testing.T, reqs []json.RawMessage) {
			// The fork's turn carried the source's history; the source's next turn did not carry the fork's.
			wantMessages(t, reqs[1], "Remember the word kiwi.", "Noted: kiwi.", "What was the word?")
			wantMessages(t, reqs[2], "Remember the word kiwi.", "Noted: kiwi.", "Now something else.")
		}},
	"subagent": {script: "subagent.mjs", model: `{"tool_calls":[{"id":"call_1","name":"task","arguments":"{\"description\":\"Find the greeting\",\"prompt\":\"Find where the greeting is defined and report the file and line.\"}"}]}
{"tool_calls":[{"id":"call_c1","name":"read_file","arguments":"{\"path\":\"greet.go\"}"}]}
{"text":"The greeting is defined in greet.go, line 3.","chunks":1}
{"text":"It is in greet.go, line 3.","chunks":1}`,
		files: map[string]string{"proj/greet.go": "package greet\n\nconst Greeting = \"Hello\"\n"},
		check: func(t *testing.T, reqs []json.RawMessage) {
			// The child started from its task alone; the parent got its report only.
			wantMessages(t, reqs[1], "Find where the greeting is defined and report the file and line.")
			wantMessages(t, reqs[3], "Where is the greeting defined?", "", "The greeting is defined in greet.go, line 3.")
		}},
	"ask": {script: "ask.mjs", model: `{"tool_calls":[{"id":"call_1","name":"ask_user","arguments":"{\"question\":\"Which database?\",\"choices\":[\"SQLite\",\"PostgreSQL\"]}"}]}
{"text":"Using PostgreSQL.","chunks":1}`,
		check: func(t *testing.T, reqs []json.RawMessage) {
			wantMessages(t, reqs[1], "Set up storage", "", "The user answered: PostgreSQL")
		}},
	"usage": usageScenario,
}

var usageScenario = sdkScenario{script: "usage.mjs",
	model: `{"text":"Hello.","chunks":1,"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":800}}}`,
	env:   map[string]string{"CROW_PROMPT_USAGE": "on", "CROW_MODELS": "fixture-model;window=8192;in=1;out=2;cached=0.25", "CROW_MODEL": "fixture-model"}}

// TestSDKClient runs the scenarios of testdata/sdkclient: the official
// TypeScript SDK client (@agentclientprotocol/sdk 2.4.0) drives the real
// binary through titles, archive, status, auth/status, logout, usage and
// cost, session/fork, a subagent and ask_user's elicitation/create, loading
// forks and children in a new process; lib.mjs checks every frame the agent
// sends with the SDK's own schemas. It needs node and a directory with the
// SDK installed from testdata/sdkclient/package-lock.json, named by
// CROW_SDK_DIR (.ci/run makes one); without CROW_SDK_DIR it is skipped.
func TestSDKClient(t *testing.T) {
	node, sdk := sdkSetup(t)
	bin := binary(t)
	for name, sc := range sdkScenarios {
		t.Run(name, func(t *testing.T) {
			model, out, err := runSDKScenario(t, node, sdk, bin, sc, nil)
			if err != nil || strings.TrimSpace(out) != "ok" {
				t.Fatalf("the SDK client failed: %v\n%s", err, out)
			}
			if sc.check != nil {
				sc.check(t, model.Requests())
			}
		})
	}
}

// TestSDKClientRejectsBadFrames shows that TestSDKClient can fail: the same
// usage scenario, with one usage_update altered on its way to the SDK, fails
// both when the SDK would reject the update (a negative used: it would only
// log it and drop it) and when it would silently read it otherwise (a cost
// whose amount is a string: it would read no cost at all).
func TestSDKClientRejectsBadFrames(t *testing.T) {
	node, sdk := sdkSetup(t)
	bin := binary(t)
	for name, tc := range map[string]struct{ tamper, want string }{
		"invalid":  {`{"update":"usage_update","set":{"used":-1}}`, "(session/update): the SDK rejects it"},
		"salvaged": {`{"update":"usage_update","set":{"cost":{"amount":"0.0014","currency":"USD"}}}`, `the SDK does not read it as sent (.update.cost: sent {"amount":"0.0014","currency":"USD"}, read absent)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, out, err := runSDKScenario(t, node, sdk, bin, usageScenario, map[string]string{"CROW_SDK_TAMPER": tc.tamper})
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("want a failure naming %q, got %v:\n%s", tc.want, err, out)
			}
		})
	}
}

// sdkSetup skips without CROW_SDK_DIR; with it (as .ci/run sets it) a
// missing node or SDK is a failure, so that CI cannot skip these tests.
func sdkSetup(t *testing.T) (node, sdk string) {
	t.Helper()
	sdk = os.Getenv("CROW_SDK_DIR")
	if sdk == "" {
		t.Skip("CROW_SDK_DIR is not set: see docs/development.md (npm ci in a copy of testdata/sdkclient's package files)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("CROW_SDK_DIR is set but node is not on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("CROW_SDK_DIR has no SDK (run npm ci there with testdata/sdkclient's package.json and package-lock.json): %v", err)
	}
	return node, sdk
}

// runSDKScenario runs one script with node against a fresh fake model and
// database; it returns node's combined output, in which the SDK's own
// complaints (a dropped notification, an unknown response) show too.
func runSDKScenario(t *testing.T, node, sdk, bin string, sc sdkScenario, extra map[string]string) (*fakemodel.Server, string, error) {
	t.Helper()
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	for _, line := range strings.Split(sc.model, "\n") {
		var r fakemodel.Reply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model reply %s: %v", line, err)
		}
		model.Enqueue(r)
	}
	work := t.TempDir()
	for name, body := range sc.files {
		path := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ES modules resolve packages from the script's own directory.
	scripts, err := os.MkdirTemp(sdk, "crow-sdkclient-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scripts) })
	for _, name := range []string{"lib.mjs", sc.script} {
		src, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "sdkclient", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scripts, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// node's environment is the agent's: lib.mjs passes it on.
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": work, "XDG_CONFIG_HOME": work,
		"OPENAI_BASE_URL": model.URL(), "OPENAI_API_KEY": "", "CROW_DB": filepath.Join(work, "crow.db")}
	for k, v := range sc.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	cmd := exec.Command(node, filepath.Join(scripts, sc.script), bin, work)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(work, "agent-*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s (its end):\n%s", filepath.Base(l), b)
		}
	}
	return model, string(out), err
}

// wantMessages checks the contents of a model request's messages after the
// system prompt; "" matches any content (an assistant's tool calls).
func wantMessages(t *testing.T, req json.RawMessage, want ...string) {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		if m.Role != "system" {
			got = append(got, m.Content)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("model request: messages %q, want %q", got, want)
	}
	for i := range want {
		if want[i] != "" && got[i] != want[i] {
			t.Fatalf("model request: messages %q, want %q", got, want)
		}
	}
}
