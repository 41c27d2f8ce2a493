package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	sysprompt "github.com/crow-acp/crow-acp/internal/agent/prompt"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestBinary drives the built binary: what a process writes to disk and how
// it ends.
func TestBinary(t *testing.T) {
	t.Run("secrets never written and files owner-only", func(t *testing.T) { testSecrets(t) })
	t.Run("stdin closed mid-turn", func(t *testing.T) { testStdinClosedMidTurn(t) })
	t.Run("oversized line keeps memory bounded", func(t *testing.T) { testOversizedLine(t) })
	t.Run("stdout closed mid-turn", func(t *testing.T) { testStdoutClosedMidTurn(t) })
	t.Run("endless model output keeps memory bounded", func(t *testing.T) { testEndlessModel(t) })
}

func testSecrets(t *testing.T) {
	const key = "sk-robust-7e1f9c2a4b6d8e0f"
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(
		fakemodel.Reply{Text: "hello there"},
		// Endpoints echo credentials in errors; nothing may keep them.
		fakemodel.Reply{Status: 401, Text: "invalid api key " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{Status: 500, Text: "upstream saw Bearer " + key},
		fakemodel.Reply{RawSSE: "data: {\"error\":{\"message\":\"key " + key + " revoked\"}}\n\n"},
	)
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	env["OPENAI_API_KEY"] = key
	dir := filepath.Dir(filepath.Dir(env["CROW_DB"]))
	env["CROW_LOG_FILE"] = filepath.Join(dir, "logs", "crow.log")
	p := startACP(t, env)
	p.Init()
	sid := p.Session(cwd)
	p.StopReason(sid, "hi")
	for range 3 {
		_, _ = p.Send(sid, "again")
	}
	// MCP servers' env values and headers are credentials too (issue 13
	// case 5): the frame log, the session and its export keep only masks.
	const mcpEnv, mcpHdr = "mcp-env-secret-7070", "mcp-hdr-secret-8080"
	servers := []acp.McpServer{
		{Name: "tok", Command: "/nonexistent/mcp-server", Args: []string{}, Env: []acp.EnvVariable{{Name: "GH_TOKEN", Value: mcpEnv}}},
		{Type: "http", Name: "api", URL: "http://127.0.0.1:1/mcp", Headers: []acp.HTTPHeader{{Name: "Authorization", Value: "Bearer " + mcpHdr}}},
	}
	p.WithUpdates(nil, func() {
		if _, err := p.LoadSession(p.Ctx(), &acp.LoadSessionRequest{SessionID: sid, Cwd: cwd, McpServers: servers}); err != nil {
			t.Fatalf("session/load: %v", err)
		}
	})
	p.exit(t)
	export, err := command(t, nil, "sessions", "export", sid, "--format", "json", "--db", env["CROW_DB"]).CombinedOutput()
	if err != nil || !bytes.Contains(export, []byte(sid)) {
		t.Fatalf("export: %v\n%s", err, export)
	}
	migrated := filepath.Join(dir, "copy", "crow.db")
	if out, err := command(t, nil, "migrate", "--from", env["CROW_DB"], "--to", migrated).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}

	// The key was really used: every request carried it.
	hs := m.Headers()
	if len(hs) < 3 {
		t.Fatalf("only %d model requests", len(hs))
	}
	for _, h := range hs {
		if h.Get("Authorization") != "Bearer "+key {
			t.Fatalf("request without the key: Authorization %q", h.Get("Authorization"))
		}
	}
	// And nothing written during the run holds it: stdout, stderr, and
	// every file (database, WAL, log).
	check := func(where string, b []byte) {
		if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(key[3:])) {
			t.Errorf("the API key appears in %s", where)
		}
		for _, s := range []string{mcpEnv, mcpHdr} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("an MCP server's credential appears in %s", where)
			}
		}
	}
	check("the export", export)
	if !bytes.Contains(export, []byte("GH_TOKEN")) {
		t.Errorf("the export lost the MCP server's structure:\n%.2000s", export)
	}
	check("stdout", p.Frames())
	check("stderr", []byte(p.logs()))
	files := 0
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	logData, err := os.ReadFile(env["CROW_LOG_FILE"])
	if err != nil || !bytes.Contains(logData, []byte("model request failed")) {
		t.Fatalf("the log file does not record the failures (err %v): the scan proves nothing", err)
	}
	if files < 2 {
		t.Fatalf("only %d files written", files)
	}

	// Owner-only: the database (and its WAL/SHM) and the log, and their
	// directories.
	for _, path := range []string{env["CROW_DB"], env["CROW_DB"] + "-wal", env["CROW_DB"] + "-shm", env["CROW_LOG_FILE"]} {
		info, err := os.Stat(path)
		if os.IsNotExist(err) && strings.HasSuffix(path, "-shm") || os.IsNotExist(err) && strings.HasSuffix(path, "-wal") {
			continue // checkpointed away on close
		}
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %o: readable by others", path, perm)
		}
	}
	for _, d := range []string{filepath.Dir(env["CROW_DB"]), filepath.Dir(env["CROW_LOG_FILE"])} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("directory %s has mode %o", d, perm)
		}
	}
}

func testStdinClosedMidTurn(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.Enqueue(fakemodel.Reply{Text: "partial answer that never ends", StallAfter: 3})
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	p := startACP(t, env)
	p.Init()
	sid := p.Session(cwd)
	var shown strings.Builder
	partial := make(chan struct{})
	p.Watch(func(n *acp.SessionNotification) {
		if shown.WriteString(crowtest.ChunkText(n)); shown.String() == "partial answer that " {
			close(partial)
		}
	})
	go func() { _, _ = p.Send(sid, "tell me") }() // never answered: stdin closes first
	<-partial
	start := time.Now()
	p.exit(t) // stdin closes mid-turn: a clean exit
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("shutdown took %s", d)
	}

	msgs := crowtest.Messages(t, env["CROW_DB"], sid)
	if len(msgs) != 2 || msgs[0].Content != "tell me" || msgs[1].Content != shown.String() {
		t.Fatalf("stored after shutdown: %s", describe(msgs))
	}
	if msgs[1].Status != persistence.StatusCancelled {
		t.Fatalf("the cut reply is %q, want cancelled", msgs[1].Status)
	}
}

func describe(msgs []persistence.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  %d %s %s %q", m.Seq, m.Role, m.Status, m.Content)
	}
	return b.String()
}

func testOversizedLine(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	p := startACP(t, env, "--max-line-bytes", "1048576")
	p.Init()
	// A 256 MiB line, written in pieces: the agent must skip it, not
	// buffer it.
	const size = 256 << 20
	go func() {
		piece := bytes.Repeat([]byte("a"), 1<<20)
		_, _ = io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":77,"method":"session/new","params":{"cwd":"`)
		for written := 0; written < size; written += len(piece) {
			if _, err := p.stdin.Write(piece); err != nil {
				return
			}
		}
		_, _ = io.WriteString(p.stdin, "\"}}\n")
	}()
	var answer struct{ Error crowtest.RPCError }
	if err := json.Unmarshal(p.NextStray(), &answer); err != nil {
		t.Fatal(err)
	}
	if e := answer.Error; e.Code != -32600 || !strings.Contains(e.Message, "too large") {
		t.Fatalf("want -32600 too large, got %+v", e)
	}
	// Still serving.
	sid := p.Session(cwd)
	if sid == "" {
		t.Fatal("no session after the oversized line")
	}
	if hwm := peakRSSKiB(p.cmd.Process.Pid); hwm > 100<<10 {
		t.Fatalf("peak RSS %d KiB after a %d MiB line: the line was buffered", hwm, size>>20)
	} else if hwm == 0 {
		t.Log("no /proc: peak RSS not checked")
	}
	p.exit(t)
}

// Issue 37 item 3: an AGENTS.md that is a FIFO nobody writes stalled the
// connection for good (the open blocked on the request path, and closing
// stdin did not end the process). Now it is passed over: the session opens,
// the next request of another session is answered, the folder's next
// instruction file is what the model is told, and the process ends when
// stdin closes.
func TestInstructionFileFIFO(t *testing.T) {
	m := fakemodel.Start()
	t.Cleanup(m.Close)
	m.SetFallback(fakemodel.Reply{Text: "ok"})
	env, cwd := crowtest.AgentEnv(t, m.URL(), nil)
	if err := syscall.Mkfifo(filepath.Join(cwd, "AGENTS.md"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "CLAUDE.md"), []byte("Use tabs, not spaces."), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startACP(t, env)
	p.Init()
	sid := p.Session(cwd)
	p.Session(t.TempDir()) // the connection was stalled here
	p.StopReason(sid, "hi")
	if sys := crowtest.SystemPrompt(t, m.Requests()[0]); !strings.Contains(sys, "Instructions from CLAUDE.md:\nUse tabs, not spaces.") {
		t.Errorf("the system prompt lacks CLAUDE.md:\n%s", sys)
	}
	p.exit(t)
}

// TestLoadNothingToCompactBinary is issue 29's finding 1 against the real
// binary: one long turn stored, then loaded by a client that advertises
// session.compaction (as exec does) with a window where the context is
// over the compaction threshold but fits and nothing can be cut. The
// process used to panic right after the load response (exit 2); now it
// reports the compaction, stays up and answers the next prompt.
func TestLoadNothingToCompactBinary(t *testing.T) {
	model, _, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "noted"})
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"CROW_LOG_LEVEL": "warn"}
		for k, v := range env {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}`
	load := func(p *proc, sid string) [][]byte {
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
		frames := p.until("1", 10*time.Second)
		if !strings.Contains(string(frames[len(frames)-1]), `"result"`) {
			t.Fatalf("session/load: %s", frames[len(frames)-1])
		}
		return frames
	}

	big := with(map[string]string{"CROW_CONTEXT_WINDOW": "100000"})
	p := startProc(t, big)
	p.send(init)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`)
	sid := sessionIDOf(t, p.until("1", 10*time.Second))
	long := strings.Repeat("the parser returns an error when the input is empty and we add a test for it ", 60)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":` + strconv.Quote(long) + `}]}}`)
	p.until("2", 10*time.Second)
	p.close()

	// The size of the stored context as a new process counts it on load.
	// The system prompt's tier follows the window, so it is measured with a
	// window of the tier the last process will have (below
	// sysprompt.CompactFrom), large enough that this load compacts nothing.
	measure := with(map[string]string{"CROW_CONTEXT_WINDOW": strconv.Itoa(sysprompt.CompactFrom - 1)})
	p = startProc(t, measure)
	p.send(init)
	p.until("0", 10*time.Second)
	load(p, sid)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"_crow/context/build","params":{"sessionId":"` + sid + `"}}`)
	frames := p.until("2", 10*time.Second)
	var built struct {
		Result struct{ Tokens int } `json:"result"`
	}
	if err := json.Unmarshal(frames[len(frames)-1], &built); err != nil || built.Result.Tokens == 0 {
		t.Fatalf("_crow/context/build: %s", frames[len(frames)-1])
	}
	p.close()

	// Over the 0.9 threshold, under the budget, one turn: nothing to cut.
	const reserve = 256
	if w := built.Result.Tokens + 40 + reserve; sysprompt.TierFor(w) != sysprompt.TierFor(sysprompt.CompactFrom-1) {
		t.Fatalf("a %d-token window has another prompt tier than the one measured: the test does not reach its case", w)
	}
	p = startProc(t, with(map[string]string{"CROW_CONTEXT_WINDOW": strconv.Itoa(built.Result.Tokens + 40 + reserve),
		"CROW_OUTPUT_RESERVE": strconv.Itoa(reserve)}))
	p.send(init)
	p.until("0", 10*time.Second)
	load(p, sid)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"and now?"}]}}`)
	frames = p.until("2", 20*time.Second)
	all := ""
	for _, f := range frames {
		all += string(f) + "\n"
	}
	if !strings.Contains(all, `"compaction_update"`) || !strings.Contains(all, "nothing it could compact") {
		t.Fatalf("no compaction_update saying nothing could be compacted; frames:\n%s", all)
	}
	if !strings.Contains(string(frames[len(frames)-1]), `"end_turn"`) {
		t.Fatalf("prompt after the load: %s\nstderr:\n%s", frames[len(frames)-1], p.logs())
	}
	if strings.Contains(p.logs(), "panic") {
		t.Fatalf("stderr mentions a panic:\n%s", p.logs())
	}
	p.close()
}

// TestPriceNotANumberRefused (issue 37, item 8): a price that is NaN,
// infinite or negative, in CROW_MODELS or the configuration file, stops
// the real binary with a configuration error naming it. A NaN price made
// every cost NaN, which JSON cannot hold: the session's metadata, its mode
// with it, was stored empty after the first model request.
func TestPriceNotANumberRefused(t *testing.T) {
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
		vars := map[string]string{"HOME": dir, "CROW_CONFIG": conf, "CROW_DB": filepath.Join(dir, "crow.db")}
		if c.models != "" {
			vars["CROW_MODELS"] = c.models
		}
		code, _, errs := runCmd(t, command(t, vars, "config", "show"))
		if code != exitUsage || !strings.Contains(errs, c.want) || !strings.Contains(errs, "price") {
			t.Errorf("%s%s: exit %d, stderr %q; want exit %d naming %s", c.models, c.file, code, errs, exitUsage, c.want)
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
	model, _, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "planned", Usage: &fakemodel.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}})
	env["CROW_MODELS"], env["CROW_MODEL"], env["CROW_LOG_LEVEL"] = "big;in=1e308;out=1e308", "big", "warn"
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`

	p := startProc(t, env)
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

	p = startProc(t, env)
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

// maxInitBytes bounds what the packages' initialisers allocate before
// main runs: every editor that launches crow-acp pays for them before
// initialize is answered. A syntax highlighter's lexer registry once cost
// 4.7 MB and about 50 ms here; our own packages' regular expressions,
// Markdown parser, highlighter tables and CRC table (now built on first
// use) another 220 KB. Today's total is about 660 KB, nearly all of it
// dependencies' (goldmark's entity tables and expressions, openai-go's
// responses unions, jsonschema-go). Bytes, not time: GODEBUG=inittrace's
// allocation counts do not depend on the load.
const maxInitBytes = 800 << 10

// maxOwnInitBytes bounds our own packages' share (about 30 KB today): a
// table or regular expression that answering initialize does not need is
// built on first use (sync.OnceValue), not by a package initialiser.
const maxOwnInitBytes = 64 << 10

func TestStartupInitCost(t *testing.T) {
	cmd := command(t, map[string]string{"GODEBUG": "inittrace=1"}, "version")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crow-acp version: %v\n%s", err, stderr.Bytes())
	}
	type pkg struct {
		name  string
		bytes int
	}
	var pkgs, own []pkg
	total, ownTotal := 0, 0
	// init internal/bytealg @0.001 ms, 0.003 ms clock, 0 bytes, 0 allocs
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		pkgs = append(pkgs, pkg{f[1], n})
		total += n
		if strings.HasPrefix(f[1], "github.com/crow-acp/crow-acp/") {
			own = append(own, pkg{f[1], n})
			ownTotal += n
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("no inittrace lines on stderr:\n%s", stderr.Bytes())
	}
	if total > maxInitBytes {
		sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].bytes > pkgs[j].bytes })
		t.Errorf("package initialisers allocate %d bytes before main, more than %d; the largest: %v", total, maxInitBytes, pkgs[:min(5, len(pkgs))])
	}
	if ownTotal > maxOwnInitBytes {
		sort.Slice(own, func(i, j int) bool { return own[i].bytes > own[j].bytes })
		t.Errorf("our packages' initialisers allocate %d bytes, more than %d; the largest: %v", ownTotal, maxOwnInitBytes, own[:min(5, len(own))])
	}
	t.Logf("%d packages initialised, %d bytes (%d by our own)", len(pkgs), total, ownTotal)
}
