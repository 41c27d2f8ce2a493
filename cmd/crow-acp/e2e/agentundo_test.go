package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/checkpoint"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestAgentUndo: on each store, the agent records what its turns change
// (an edit, a multi-file apply_patch that adds, updates, deletes and moves,
// a write over a file, and `sed -i` run by a command in a git work tree),
// and, in a new process, /undo, /redo and /rewind 1 take it back to the
// exact bytes and modes; a file the user changed after the agent is
// reported and left alone unless --force; the next model request and a
// session/load lack the undone turns; the user's .git is byte-identical;
// /permissions lists and revokes the "always" rules the turns stored.
func TestAgentUndo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	onBothStores(t, testAgentUndo)
}

type undoFile struct {
	text string
	mode os.FileMode
}

func testAgentUndo(t *testing.T, dsn string) {
	model, db, env, cwd := procSetupOn(t, dsn)
	env["CROW_MODEL"] = fakemodel.ModelID
	home := t.TempDir()
	env["HOME"], env["XDG_DATA_HOME"] = home, filepath.Join(home, "data")
	gitEnv := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = cwd, gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	start := map[string]undoFile{
		"a.txt": {"alpha\n", 0o644}, "b.sh": {"#!/bin/sh\necho b\n", 0o755}, "old.txt": {"old\n", 0o644},
		"gone.txt": {"delete me\n", 0o600}, "w.txt": {"write over\r\n", 0o640}, "sed.txt": {"one two\n", 0o644},
	}
	for n, f := range start {
		if err := os.WriteFile(filepath.Join(cwd, n), []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(cwd, n), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "start")
	// The user's stash, refs, index and config stay as they are.
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("stashed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("stash", "-q")
	git("config", "user.name", "someone")
	dotGit := hashTree(t, filepath.Join(cwd, ".git"))

	v := acptest.MustValidatorFor(t, "sdk-2.4.0/v1/schema.unstable.json")
	methods := map[string]string{}
	next := 0
	p := startProc(t, env)
	request(t, p, v, methods, &next, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, "")
	created, _ := request(t, p, v, methods, &next, "session/new", `{"cwd":`+quote(cwd)+`,"mcpServers":[]}`, "")
	sid := sessionIDOf(t, [][]byte{created})
	say := func(text string) string {
		t.Helper()
		return promptReply(t, p, v, methods, &next, sid, text)
	}
	call := func(id, name string, args map[string]string) fakemodel.ToolCall {
		b, _ := json.Marshal(args)
		return fakemodel.ToolCall{ID: id, Name: name, Arguments: string(b)}
	}
	patch := "*** Begin Patch\n*** Add File: new.txt\n+new\n*** Update File: b.sh\n@@\n #!/bin/sh\n-echo b\n+echo B\n" +
		"*** Delete File: gone.txt\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-old\n+moved\n*** End Patch\n"
	model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
		call("c1", "edit_file", map[string]string{"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
		call("c2", "apply_patch", map[string]string{"input": patch}),
		call("c3r", "read_file", map[string]string{"path": "w.txt"}),
		call("c3", "write_file", map[string]string{"path": "w.txt", "content": "written\n"}),
		runCall("c4", "sed -i s/two/TWO/ sed.txt"),
	}}, fakemodel.Reply{Text: "First done."})
	say("first: change everything")
	model.Enqueue(fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
		call("c5", "edit_file", map[string]string{"path": "a.txt", "old_string": "ALPHA", "new_string": "second"}),
	}}, fakemodel.Reply{Text: "Second done."})
	say("second: once more")
	after := map[string]undoFile{
		"a.txt": {"second\n", 0o644}, "b.sh": {"#!/bin/sh\necho B\n", 0o755}, "moved.txt": {"moved\n", 0o644},
		"new.txt": {"new\n", 0}, "w.txt": {"written\r\n", 0o640}, "sed.txt": {"one TWO\n", 0o644},
	}
	checkFiles(t, cwd, after, []string{"gone.txt", "old.txt"})

	// /permissions lists the rules the turns stored (each call was
	// "always allowed").
	list := say("/permissions")
	if !strings.Contains(list, "| ID | decision |") || !strings.Contains(list, "always allow") {
		t.Errorf("/permissions:\n%s", list)
	}
	p.close()

	// A new process undoes what the first one recorded.
	p = startProc(t, env)
	request(t, p, v, methods, &next, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, "")
	request(t, p, v, methods, &next, "session/resume", `{"sessionId":`+quote(sid)+`,"cwd":`+quote(cwd)+`,"mcpServers":[]}`, "")
	out := say("/undo")
	if !strings.Contains(out, "Undid prompt 2") || !strings.Contains(out, "restored a.txt") {
		t.Errorf("/undo:\n%s", out)
	}
	checkFile(t, cwd, "a.txt", undoFile{"ALPHA\n", 0o644})
	if out := say("/redo"); !strings.Contains(out, "restored a.txt") {
		t.Errorf("/redo:\n%s", out)
	}
	checkFile(t, cwd, "a.txt", undoFile{"second\n", 0o644})

	// The user changes w.txt after the agent: /rewind 1 leaves it, says so.
	if err := os.WriteFile(filepath.Join(cwd, "w.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = say("/rewind")
	if !strings.Contains(out, "1. first: change everything") || !strings.Contains(out, "2. second: once more") {
		t.Errorf("/rewind:\n%s", out)
	}
	out = say("/rewind 1")
	if !strings.Contains(out, "skipped w.txt") || !strings.Contains(out, "+write over") || !strings.Contains(out, "first: change everything") {
		t.Errorf("/rewind 1 with a file the user changed:\n%s", out)
	}
	checkFile(t, cwd, "w.txt", undoFile{"the user's\n", 0o640})
	checkFiles(t, cwd, without(start, "w.txt"), []string{"new.txt", "moved.txt"})
	// Redo, then --force: the user's change is overwritten too.
	say("/redo")
	out = say("/rewind 1 --force")
	if !strings.Contains(out, "restored w.txt") {
		t.Errorf("/rewind 1 --force:\n%s", out)
	}
	checkFiles(t, cwd, start, []string{"new.txt", "moved.txt"})
	if got := hashTree(t, filepath.Join(cwd, ".git")); !mapsEqual(got, dotGit) {
		t.Errorf("the user's .git changed")
	}

	// The next request holds none of the undone turns.
	before := len(model.Requests())
	model.Enqueue(fakemodel.Reply{Text: "Fresh."})
	say("third")
	reqs := model.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("%d model requests, want %d", len(reqs), before+1)
	}
	last := string(reqs[len(reqs)-1])
	if strings.Contains(last, "first: change") || strings.Contains(last, "Second done") || !strings.Contains(last, "third") {
		t.Errorf("the request after /rewind 1 holds the undone turns:\n%s", last)
	}

	// A client's button: the prompts as they now stand, and an undo's
	// report without changing anything.
	got, _ := request(t, p, v, methods, &next, "_crow/prompts", `{"sessionId":`+quote(sid)+`}`, "")
	if !strings.Contains(string(got), `"prompts":[{"number":1,"text":"third"}]`) {
		t.Errorf("_crow/prompts: %s", got)
	}
	got, _ = request(t, p, v, methods, &next, "_crow/undo", `{"sessionId":`+quote(sid)+`,"to":1,"dryRun":true}`, "")
	if !strings.Contains(string(got), `"dryRun":true`) || !strings.Contains(string(got), `"prompt":{"number":1,"text":"third"}`) {
		t.Errorf("_crow/undo dryRun: %s", got)
	}

	out = say("/permissions revoke all")
	if !strings.Contains(out, "Revoked") {
		t.Errorf("/permissions revoke all:\n%s", out)
	}
	if out := say("/permissions"); !strings.Contains(out, "No \"always\" rules") {
		t.Errorf("/permissions after revoke all:\n%s", out)
	}
	p.close()

	// session/load replays the conversation as it now stands.
	p = startProc(t, env)
	request(t, p, v, methods, &next, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, "")
	next++
	id := strconv.Itoa(next)
	methods[id] = "session/load"
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/load","params":{"sessionId":` + quote(sid) + `,"cwd":` + quote(cwd) + `,"mcpServers":[]}}`)
	var replay strings.Builder
	for _, f := range p.until(id, 30*time.Second) {
		replay.Write(f)
	}
	if r := replay.String(); strings.Contains(r, "first: change") || strings.Contains(r, "Second done") || !strings.Contains(r, "Fresh.") {
		t.Errorf("session/load after the undo replays the undone turns:\n%s", r)
	}
	p.close()

	// An undo killed midway (its record pending, its lease left by a dead
	// process) is reported when the session is next opened.
	abandonUndo(t, db, sid)
	p = startProc(t, env)
	request(t, p, v, methods, &next, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, "")
	request(t, p, v, methods, &next, "session/resume", `{"sessionId":`+quote(sid)+`,"cwd":`+quote(cwd)+`,"mcpServers":[]}`, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := p.recv(time.Until(deadline))
		if err := v.ValidateAgentFrame(f, func(raw json.RawMessage) string { return methods[string(raw)] }); err != nil {
			t.Error(err)
		}
		if strings.Contains(string(f), "an interrupted undo") && strings.Contains(string(f), "a.txt") {
			break
		}
	}
	p.close()
}

// abandonUndo stores, for session sid, an undo record left pending and the
// session's lease held by a process that no longer runs: what an agent
// killed midway through an undo leaves.
func abandonUndo(t *testing.T, db, sid string) {
	t.Helper()
	ctx := context.Background()
	store, err := backend.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	l := &persistence.Lease{SessionID: sid, Owner: "conn_dead", PID: dead.Process.Pid, Host: host}
	if err := store.AcquireLease(ctx, l, time.Minute, ""); err != nil {
		t.Fatal(err)
	}
	msgs, err := store.Messages(ctx, sid, persistence.MessageFilter{})
	if err != nil || len(msgs) == 0 {
		t.Fatalf("messages: %v", err)
	}
	u := &persistence.Undo{SessionID: sid, FromTurn: msgs[len(msgs)-1].Seq, State: persistence.UndoPending,
		Files: []persistence.UndoFile{{Path: "a.txt", Action: persistence.UndoRestored}}}
	if err := store.WithFence(l.Fence()).(checkpoint.Store).CreateUndo(ctx, u); err != nil {
		t.Fatal(err)
	}
}

// promptReply sends text as a prompt of session sid, answers every
// permission question "allow_always" (when offered, else "allow_once"), and returns the agent's reply text.
func promptReply(t *testing.T, p *proc, v *acptest.Validator, methods map[string]string, next *int, sid, text string) string {
	t.Helper()
	*next++
	id := strconv.Itoa(*next)
	methods[id] = "session/prompt"
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":` + quote(sid) + `,"prompt":[{"type":"text","text":` + quote(text) + `}]}}`)
	var reply strings.Builder
	deadline := time.Now().Add(30 * time.Second)
	for {
		f := p.recv(time.Until(deadline))
		if err := v.ValidateAgentFrame(f, func(raw json.RawMessage) string { return methods[string(raw)] }); err != nil {
			t.Errorf("%s: %v", text, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Update struct {
					Kind    string          `json:"sessionUpdate"`
					Content json.RawMessage `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		mustJSON(t, f, &m)
		switch {
		case m.Method == "session/request_permission":
			answer := "allow_once"
			if strings.Contains(string(f), `"allow_always"`) {
				answer = "allow_always"
			}
			p.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"` + answer + `"}}}`)
		case m.Method == "session/update" && m.Params.Update.Kind == "agent_message_chunk":
			var c struct {
				Text string `json:"text"`
			}
			mustJSON(t, m.Params.Update.Content, &c)
			reply.WriteString(c.Text)
		case m.Method == "" && string(m.ID) == id:
			if errorCode(t, f) != 0 {
				t.Fatalf("%s: %s", text, f)
			}
			return reply.String()
		}
	}
}

// checkFiles fails unless every file of want has its bytes and mode (0:
// any) and none of absent exists.
func checkFiles(t *testing.T, dir string, want map[string]undoFile, absent []string) {
	t.Helper()
	for n, f := range want {
		checkFile(t, dir, n, f)
	}
	for _, n := range absent {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s exists (%v), want it absent", n, err)
		}
	}
}

func checkFile(t *testing.T, dir, name string, want undoFile) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	fi, _ := os.Stat(filepath.Join(dir, name))
	if string(b) != want.text || (want.mode != 0 && fi.Mode().Perm() != want.mode) {
		t.Errorf("%s: %q %v, want %q %v", name, b, fi.Mode().Perm(), want.text, want.mode)
	}
}

func without(m map[string]undoFile, name string) map[string]undoFile {
	out := make(map[string]undoFile, len(m))
	for k, v := range m {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// hashTree hashes every file under dir, by path.
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			out[path] = sha256.Sum256(b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapsEqual(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
