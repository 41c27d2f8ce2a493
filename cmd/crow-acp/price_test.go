package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestPriceNotANumberRefused (issue 37, item 8): a price that is NaN,
// infinite or negative, in CROW_MODELS or the configuration file, stops
// the real binary with a configuration error naming it. A NaN price made
// every cost NaN, which JSON cannot hold: the session's metadata, its mode
// with it, was stored empty after the first model request.
func TestPriceNotANumberRefused(t *testing.T) {
	bin := testBinary(t)
	cases := []struct{ models, file, want string }{
		{models: "m1;in=NaN", want: `in="NaN"`},
		{models: "m1;out=+Inf", want: `out="+Inf"`},
		{models: "m1;cached=-0.5", want: `cached="-0.5"`},
		{file: "input_price = nan", want: "models[0].input_price"},
		{file: "output_price = inf", want: "models[0].output_price"},
		{file: "cached_input_price = -inf", want: "models[0].cached_input_price"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		conf := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(conf, []byte("[[models]]\nname = \"m1\"\n"+c.file+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "config", "show")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CROW_CONFIG=" + conf, "CROW_DB=" + filepath.Join(dir, "crow.db")}
		if c.models != "" {
			cmd.Env = append(cmd.Env, "CROW_MODELS="+c.models)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err == nil {
			code = 0
		}
		if code != exitUsage || !strings.Contains(errb.String(), c.want) || !strings.Contains(errb.String(), "price") {
			t.Errorf("%s%s: exit %d, stderr %q; want exit %d naming %s", c.models, c.file, code, errb.String(), exitUsage, c.want)
		}
	}
}

// TestCostOverflowKeepsMetadata (issue 37, item 8) runs the real binary
// with a price so large (1e308 per million tokens, a valid number) that
// a request's cost overflows to +Inf: the session's cost keeps its last
// finite total, and the session keeps its metadata, so a session set to
// plan mode comes back in plan mode in a new process (it came back in
// default mode: the metadata had been stored empty).
func TestCostOverflowKeepsMetadata(t *testing.T) {
	bin := testBinary(t)
	model, _, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "planned", Usage: &fakemodel.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}})
	env["CROW_MODELS"], env["CROW_MODEL"], env["CROW_LOG_LEVEL"] = "big;in=1e308;out=1e308", "big", "warn"
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`

	p := startProc(t, bin, env)
	p.send(init)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
	sid := sessionIDOf(t, p.until("1", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":"` + sid + `","modeId":"plan"}}`)
	p.until("2", 10*time.Second)
	for id := 3; id <= 4; id++ {
		p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"plan it"}]}}`)
		frames := p.until(strconv.Itoa(id), 10*time.Second)
		if last := string(frames[len(frames)-1]); !strings.Contains(last, `"end_turn"`) {
			t.Fatalf("prompt %d: %s\nstderr:\n%s", id, last, p.logs())
		}
	}
	p.close()

	p = startProc(t, bin, env)
	p.send(init)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
	frames := p.until("1", 10*time.Second)
	var res struct {
		Result struct {
			Modes struct {
				CurrentModeID string `json:"currentModeId"`
			} `json:"modes"`
		} `json:"result"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &res); err != nil || res.Result.Modes.CurrentModeID != "plan" {
		t.Fatalf("session/load after an overflowing cost: mode %q, want plan: %s\nstderr:\n%s",
			res.Result.Modes.CurrentModeID, frames[len(frames)-1], p.logs())
	}
	for _, f := range frames {
		if bytes.Contains(f, []byte(`"usage_update"`)) && (bytes.Contains(f, []byte("Inf")) || bytes.Contains(f, []byte("NaN"))) {
			t.Errorf("usage update with a non-finite cost: %s", f)
		}
	}
	p.close()
}
