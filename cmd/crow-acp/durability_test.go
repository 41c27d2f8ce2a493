package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/projection"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestFixturesRebuild runs every fixture scenario in-process and then proves
// that each session's messages and compactions, rebuilt from its event log,
// equal the live tables, and that the log holds the session's frames.
func TestFixturesRebuild(t *testing.T) {
	fixture.RunDir(t, fixtureDir, func(t *testing.T, f *fixture.Fixture) (fixture.Env, fixture.Starter, fixture.Model) {
		m := startModel(t, f)
		env := fixture.NewEnv(t)
		env.ModelURL = m.URL()
		t.Cleanup(func() { verifyAllSessions(t, env.DBPath) })
		start := fixture.PipeAgent(func(ctx context.Context, env fixture.Env, in io.Reader, out io.Writer) error {
			vars := fixtureEnv(f, env)
			code := run(ctx, nil, stdio{in: in, out: out, err: io.Discard}, func(k string) string { return vars[k] })
			if code != exitOK {
				return fmt.Errorf("crow-acp exited with code %d", code)
			}
			return nil
		})
		return env, start, m
	})
}

// verifyAllSessions checks every session in the database at path.
func verifyAllSessions(t *testing.T, path string) {
	t.Helper()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, _, err := s.ListSessions(ctx, persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range sessions {
		r, err := projection.Verify(ctx, s, sess.ID)
		if err != nil {
			t.Fatalf("verify %s: %v", sess.ID, err)
		}
		for _, d := range r.Differences {
			t.Errorf("%s: %s", sess.ID, d)
		}
		if r.Frames == 0 {
			t.Errorf("%s: no frames in its event log", sess.ID)
		}
		t.Logf("%s: %d messages, %d events, %d frames", sess.ID, r.Messages, r.Events, r.Frames)
	}
}

// buildBinary builds crow-acp once per test binary.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "crow-acp-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "crow-acp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func testBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestFrameLogFidelity sends frames with unknown fields, _meta, and string,
// integer and non-canonical numeric ids, and checks that the event log holds
// every frame in and out byte for byte, in order, with the right kinds.
func TestFrameLogFidelity(t *testing.T) {
	bin := testBinary(t)
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	model.SetFallback(fakemodel.Reply{Text: "two words"})
	db := filepath.Join(t.TempDir(), "crow.db")
	cwd := t.TempDir()
	p := startProc(t, bin, map[string]string{"OPENAI_BASE_URL": model.URL(), "CROW_DB": db})

	var in, out []string
	exchange := func(line, id string) {
		t.Helper()
		in = append(in, line)
		p.send(line)
		if id == "" {
			return
		}
		for _, f := range p.until(id, 10*time.Second) {
			out = append(out, string(f))
		}
	}
	exchange(`{"jsonrpc":"2.0","id":"init-ü","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false},"_meta":{"vendor.x":[1,2.50,1e3]}},"unknownField":{"nested":null}},"_meta":{"top":true}}`, `"init-ü"`)
	exchange(`{"jsonrpc":"2.0","id":1.0,"method":"session/new","params":{"cwd":`+strconv.Quote(cwd)+`,"mcpServers":[],"_meta":{"k":"v"}}}`, `1.0`)
	var created struct {
		Result struct{ SessionID string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(out[len(out)-1]), &created); err != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new: %s", out[len(out)-1])
	}
	sid := created.Result.SessionID
	exchange(`{"jsonrpc":"2.0","method":"_vendor/ping","params":{"_meta":{"n":1},"sessionId":"`+sid+`"}}`, "")
	exchange(`{"jsonrpc":"2.0","id":"x","method":"vendor/unknown","params":{"a":[]}}`, `"x"`)
	exchange(`{"jsonrpc":"2.0","id":  42 ,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi","_meta":{"m":1}}],"_meta":{"trace":"abc"}}}`, `42`)
	exchange(`{not json`, `null`)
	p.close()

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessEvents, err := s.Events(ctx, sid, persistence.EventFilter{})
	if err != nil || len(sessEvents) == 0 {
		t.Fatalf("session events: %d, %v", len(sessEvents), err)
	}
	connEvents, err := s.Events(ctx, sessEvents[0].ConnectionID, persistence.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	all := append(connEvents, sessEvents...)
	slices.SortFunc(all, func(a, b persistence.Event) int { return cmp.Compare(a.ID, b.ID) })
	var gotIn, gotOut []string
	kinds := map[string]persistence.EventKind{}
	for _, e := range all {
		switch e.Direction {
		case persistence.DirIn:
			gotIn = append(gotIn, string(e.Body))
		case persistence.DirOut:
			gotOut = append(gotOut, string(e.Body))
		}
		if e.Kind.IsFrame() {
			kinds[string(e.Body)] = e.Kind
		}
	}
	if !slices.Equal(gotIn, in) {
		t.Errorf("inbound frames differ:\n got %q\nwant %q", gotIn, in)
	}
	if !slices.Equal(gotOut, out) {
		t.Errorf("outbound frames differ:\n got %q\nwant %q", gotOut, out)
	}
	for body, want := range map[string]persistence.EventKind{
		in[0]: persistence.EventRequest, in[2]: persistence.EventNotification, in[5]: persistence.EventInvalid,
		out[0]: persistence.EventResponse,
	} {
		if kinds[body] != want {
			t.Errorf("kind of %.60s = %q, want %q", body, kinds[body], want)
		}
	}
	// The turn's frames and lifecycle carry its number.
	var lifecycle []string
	for _, e := range sessEvents {
		if !e.Kind.IsFrame() {
			lifecycle = append(lifecycle, fmt.Sprintf("%s@%d", e.Kind, e.Turn))
		}
	}
	want := []string{"session_created@0", "turn_started@1", "message_appended@1", "message_appended@1", "message_updated@1", "turn_completed@1", "session_closed@0"}
	if !slices.Equal(lifecycle, want) {
		t.Errorf("lifecycle %v, want %v", lifecycle, want)
	}
}
