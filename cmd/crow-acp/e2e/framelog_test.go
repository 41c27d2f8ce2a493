package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/framelog"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/persistence/postgres/pgtest"
	"github.com/crow-acp/crow-acp/internal/persistence/projection"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestFrameLogFidelity sends frames with unknown fields, _meta, and string,
// integer and non-canonical numeric ids, and checks that the event log holds
// every frame in and out byte for byte, in order, with the right kinds.
func TestFrameLogFidelity(t *testing.T) {
	model, db, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "two words"})
	p := startProc(t, env)

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
	// Each stream's frames, then all in commit order.
	framesOf := map[int64][][]byte{}
	budget := persistence.NewBudget(persistence.MaxDecoded)
	for _, evs := range [][]persistence.Event{connEvents, sessEvents} {
		for _, e := range evs {
			if framesOf[e.ID], err = e.Frames(budget); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := append(connEvents, sessEvents...)
	slices.SortFunc(all, func(a, b persistence.Event) int { return cmp.Compare(a.ID, b.ID) })
	var gotIn, gotOut []string
	kinds := map[string]persistence.EventKind{}
	for _, e := range all {
		for _, f := range framesOf[e.ID] {
			switch e.Direction {
			case persistence.DirIn:
				gotIn = append(gotIn, string(f))
			case persistence.DirOut:
				gotOut = append(gotOut, string(f))
			}
			kinds[string(f)] = e.Kind
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

// Issue 37 item 10: a client's frames that named an MCP server's secret in
// a way the frame log's mask did not read (a duplicated key, whose last
// occurrence the agent uses; a key in another case, which encoding/json
// matches; a notification; trailing bytes) kept the secret in the
// database. Sent to the real binary, none of them may leave it there: every
// frame of every stream is read back.
func TestFrameLogMasksMCPSecrets(t *testing.T) {
	_, db, env, cwd := procSetup(t)
	p := startProc(t, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("0", 10*time.Second)
	server := func(secret string) string {
		return `{"name":"tools","command":"/nonexistent/mcp","args":[],"env":[{"name":"TOKEN","value":"` + secret + `"}]}`
	}
	params := `"cwd":` + quote(cwd) + `,`
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{` + params + `"mcpServers":[],"mcpServers":[` + server("SECRET-duplicate-4711") + `]}}`)
	dup := sessionIDOf(t, p.until("1", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{` + params + `"MCPServers":[` +
		`{"name":"tools","command":"/nonexistent/mcp","args":[],"ENV":[{"name":"TOKEN","Value":"SECRET-case-4711"}]}]}}`)
	cased := sessionIDOf(t, p.until("2", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","method":"session/new","params":{` + params + `"mcpServers":[` + server("SECRET-notification-4711") + `]}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{` + params + `"mcpServers":[` + server("SECRET-trailing-4711") + `]}} x`)
	p.until("null", 10*time.Second) // -32700: the line is not one JSON value
	p.send(`{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}`)
	p.until("4", 10*time.Second)
	p.close()

	streams := []string{dup, cased}
	crowtest.WithStore(t, db, func(s persistence.Store) error {
		evs, err := s.Events(context.Background(), dup, persistence.EventFilter{})
		if err != nil || len(evs) == 0 {
			t.Fatalf("no events for %s: %v", dup, err)
		}
		streams = append(streams, evs[0].ConnectionID)
		all, _, err := s.ListSessions(context.Background(), persistence.ListSessionsOptions{Limit: persistence.MaxListLimit})
		for _, o := range all {
			streams = append(streams, o.ID)
		}
		return err
	})
	frames := 0
	for _, stream := range streams {
		for _, e := range crowtest.Events(t, db, stream) {
			fs, err := e.Frames(persistence.NewBudget(persistence.MaxDecoded))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				frames++
				if bytes.Contains(f, []byte("SECRET-")) || bytes.Contains(e.Body, []byte("SECRET-")) {
					t.Errorf("the frame log of %s keeps an MCP server's secret: %s", stream, f)
				}
			}
		}
	}
	if frames < 10 {
		t.Fatalf("only %d frames read back", frames)
	}
}

// TestFrameLogOrdersEveryWrite drives the binary through a prompt, /compact
// and _crow/compaction/expand, collapse and delete, and reads the frame log
// back: every projection event a request caused carries the connection and
// comes after that request's frame (issue 17: the compaction undo methods
// used to write past the frame log, with no connection and before their
// request).
func TestFrameLogOrdersEveryWrite(t *testing.T) {
	model, db, env, cwd := procSetup(t)
	model.SetFallback(fakemodel.Reply{Text: "two words"})
	env["CROW_COMPACT_KEEP_RECENT"] = "2"
	c := startClient(t, env)
	sid := c.newSession(cwd)
	c.prompt(sid, strings.Repeat("a long first question ", 100))
	c.prompt(sid, strings.Repeat("a long second question ", 100))
	c.prompt(sid, "three")
	c.id++
	c.p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/compact"}]}}`, c.id, sid))
	c.p.until(fmt.Sprint(c.id), 10*time.Second)
	var list struct {
		Result struct {
			Compactions []struct {
				ID int64 `json:"compactionId"`
			} `json:"compactions"`
		} `json:"result"`
	}
	res := c.call("_crow/compaction/list", `{"sessionId":"`+sid+`"}`)
	if err := json.Unmarshal([]byte(res), &list); err != nil || len(list.Result.Compactions) != 1 {
		t.Fatalf("_crow/compaction/list: %s", res)
	}
	params := fmt.Sprintf(`{"sessionId":%q,"compactionId":%d}`, sid, list.Result.Compactions[0].ID)
	for _, op := range []string{"expand", "collapse", "delete"} {
		if res := c.call("_crow/compaction/"+op, params); !strings.Contains(res, `"result"`) {
			t.Fatalf("%s: %s", op, res)
		}
	}
	c.p.close()

	evs := crowtest.Events(t, db, sid)
	// Each projection event follows the latest request frame before it,
	// which must be one that writes; none may precede its request.
	var request string
	var changed []string
	for _, e := range evs {
		switch {
		case e.Kind == persistence.EventRequest && e.Direction == persistence.DirIn:
			request = e.Method
		case e.Kind == persistence.EventMessageAppended, e.Kind == persistence.EventMessageUpdated, e.Kind == persistence.EventMessagesChanged:
			if e.ConnectionID == "" {
				t.Errorf("%s event (seq %d) after %q has no connection", e.Kind, e.Seq, request)
			}
			if e.Kind == persistence.EventMessagesChanged {
				changed = append(changed, request)
			}
		}
	}
	want := "[session/prompt _crow/compaction/expand _crow/compaction/collapse _crow/compaction/delete]"
	if fmt.Sprint(changed) != want {
		t.Errorf("messages_changed events follow the requests %v, want %s", changed, want)
	}
}

// TestReloadsAreRecordedCheaply (issue 19, "a load adds <= 1 KB"): one
// crow-acp process loads a session 20 times, as an editor reopening a
// thread does (each request sent as soon as the previous response is
// read). On SQLite the database grows by at most 1 KB a load (pages in
// use after a checkpoint, as crow-bench measures it); on both stores every
// frame of every load (request, response, the commands and usage updates
// after it) reads back from the log byte for byte as the client got it,
// none of the replays does, and `sessions verify` still passes; migrated
// from SQLite to PostgreSQL, the same frames still read back.
func TestReloadsAreRecordedCheaply(t *testing.T) {
	onBothStores(t, testReloads)
}

func testReloads(t *testing.T, dsn string) {
	model, db, env, cwd := procSetupOn(t, dsn)
	model.SetFallback(fakemodel.Reply{Text: "an answer in a few chunks", Chunks: 5})
	c := startClient(t, env)
	sid := c.newSession(cwd)
	c.prompt(sid, "first question")
	c.prompt(sid, "second question")
	c.p.close()

	evs := crowtest.Events(t, db, sid)
	from := evs[len(evs)-1].Seq
	var before int64
	if dsn == "" {
		before = sqlitePagesInUse(t, db)
	}

	const loads = 20
	c = startClient(t, env)
	var want []string // what the log must give back: each load's frames, in order
	var after []string
	for i := range loads {
		c.id++
		id := strconv.Itoa(c.id)
		req := `{"jsonrpc":"2.0","id":` + id + `,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`
		c.p.send(req)
		var resp string
		replayed := 0
		for _, f := range c.p.until(id, 10*time.Second) {
			switch {
			case bytes.Contains(f, []byte(`"available_commands_update"`)) || bytes.Contains(f, []byte(`"usage_update"`)):
				after = append(after, string(f)) // the previous load's
			case bytes.Contains(f, []byte(`"message_chunk"`)) || bytes.Contains(f, []byte(`_message_chunk"`)):
				replayed++
			default:
				resp = string(f)
			}
		}
		if replayed == 0 {
			t.Fatalf("load %d replayed nothing", i+1)
		}
		if i > 0 {
			want = append(want, after...)
		}
		after = nil
		want = append(want, req, resp)
	}
	// The last load's updates come before the answer to one more request.
	c.p.send(`{"jsonrpc":"2.0","id":"last","method":"vendor/unknown","params":{}}`)
	for _, f := range c.p.until(`"last"`, 10*time.Second) {
		if bytes.Contains(f, []byte(`"sessionId"`)) {
			want = append(want, string(f))
		}
	}
	c.p.close()

	evs = crowtest.Events(t, db, sid)
	all, err := framelog.Frames(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range all {
		if f.Seq > from {
			got = append(got, string(f.Body))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("frame %d back from the log:\n%.300s\nsent:\n%.300s", i, got[i], want[i])
			}
		}
		t.Fatalf("%d frames back from the loads, %d sent", len(got), len(want))
	}
	if dsn == "" {
		if grew := sqlitePagesInUse(t, db) - before; grew > loads<<10 {
			t.Errorf("%d loads (and the connection's initialize) grew the database by %d bytes: want at most 1 KB a load", loads, grew)
		} else {
			t.Logf("%d loads grew the database by %d bytes", loads, grew)
		}
	}
	home := t.TempDir()
	cli := func(db string, args ...string) {
		t.Helper()
		mustRun(t, map[string]string{"CROW_DB": db, "HOME": home}, args...)
	}
	cli(db, "sessions", "verify", sid)
	if dsn != "" || os.Getenv(pgtest.EnvVar) == "" {
		return
	}
	// Migrated, the loads' records still read back: they name their
	// bases by checksum, not by seq.
	pg := pgtest.URL(t)
	cli(db, "migrate", "--from", db, "--to", pg)
	cli(pg, "sessions", "verify", sid)
	back, err := framelog.Frames(crowtest.Events(t, pg, sid))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(back); n < len(got) || string(back[n-1].Body) != got[len(got)-1] {
		t.Errorf("migrated: %d frames back, want the %d of the loads at the end", n, len(got))
	}
	var migrated []string
	for _, f := range back[len(back)-len(got):] {
		migrated = append(migrated, string(f.Body))
	}
	if strings.Join(migrated, "\n") != strings.Join(got, "\n") {
		t.Errorf("migrated, the loads' frames read back differently")
	}
}

// sqlitePagesInUse is persistencetest.SQLitePagesInUse or a failed test.
func sqlitePagesInUse(t *testing.T, path string) int64 {
	t.Helper()
	n, err := persistencetest.SQLitePagesInUse(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPacedReplyFrameLog streams a reply of ~24 KB at a pace that makes
// the agent save it several times (every 4 KB once 100 ms have passed),
// with text JSON escapes differently in places (<, >, &, quotes, control
// characters, non-ASCII). Each run of frames is then committed with a save
// and stored packed, and the frame log still gives back every update the
// client received, byte for byte, in order; the runs cost less than the
// text they carried.
func TestPacedReplyFrameLog(t *testing.T) {
	onBothStores(t, testPacedReplyFrameLog)
}

func testPacedReplyFrameLog(t *testing.T, dsn string) {
	model, db, env, cwd := procSetupOn(t, dsn)
	var text strings.Builder
	for i := 0; text.Len() < 24_000; i++ {
		text.WriteString(persistencetest.Prose(uint64(i), 400))
		text.WriteString(" <b>a & b</b> \"quoted\"\n\tnaïve café ü 😀 \x01\u2028 ")
	}
	model.SetFallback(fakemodel.Reply{Text: text.String(), Chunks: 240, DelayMS: 3})

	p := startProc(t, env)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until("0", 10*time.Second)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	sid := sessionIDOf(t, p.until("1", 10*time.Second))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"go"}]}}`)
	var sent [][]byte // the session's updates as the client read them
	for _, f := range p.until("2", 30*time.Second) {
		if bytes.Contains(f, []byte(`"method":"session/update"`)) {
			sent = append(sent, f)
		}
	}
	p.close()

	evs := crowtest.Events(t, db, sid)
	logged, err := framelog.Frames(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, f := range logged {
		if f.Direction == persistence.DirOut && bytes.Contains(f.Body, []byte(`"method":"session/update"`)) {
			got = append(got, f.Body)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("the log holds %d updates, the client read %d", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("update %d: logged %.300q, sent %.300q", i, got[i], sent[i])
		}
	}
	packed, runBytes := 0, 0
	for _, e := range evs {
		if e.Method == "session/update" && bytes.HasPrefix(e.Body, []byte{0}) {
			packed++
			runBytes += len(e.Body)
		}
	}
	if packed < 3 {
		t.Fatalf("%d runs stored packed, want one per save (several)", packed)
	}
	if runBytes > text.Len() {
		t.Errorf("the packed runs take %d bytes for %d bytes of text", runBytes, text.Len())
	}
	t.Logf("%d updates, %d packed runs, %d bytes for %d of text", len(sent), packed, runBytes, text.Len())
}

// TestStreamedReplyStoredOnce: a reply streamed in chunks is in the event
// log once, as its frames. Its message_updated records say how many bytes
// the frames hold instead of repeating them (the message row has the text
// for sqlite3), and sessions verify rebuilds the text from the frames.
// The stream is paced so that the reply is saved as it grows: the records
// cut the text at several places.
func TestStreamedReplyStoredOnce(t *testing.T) {
	onBothStores(t, func(t *testing.T, dsn string) {
		model, db, env, cwd := procSetupOn(t, dsn)
		text := persistencetest.Prose(7, 12000) + " ünïcödé 🙂 — the end"
		thought := persistencetest.Prose(8, 600)
		model.SetFallback(fakemodel.Reply{Text: text, Reasoning: thought, Chunks: 301, DelayMS: 4})
		c := startClient(t, env)
		sid := c.newSession(cwd)
		c.prompt(sid, "hi")
		c.p.close()

		ctx := context.Background()
		s, err := backend.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		msgs, err := s.Messages(ctx, sid, persistence.MessageFilter{})
		if err != nil || len(msgs) != 2 || msgs[1].Content != text || msgs[1].Reasoning != thought {
			t.Fatalf("messages: %v %d, want the reply whole in its row", err, len(msgs))
		}
		evs, err := s.Events(ctx, sid, persistence.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		updates, recorded := 0, 0
		for _, e := range evs {
			if e.Kind != persistence.EventMessageAppended && e.Kind != persistence.EventMessageUpdated {
				continue
			}
			updates++
			recorded += len(e.Body)
			if bytes.Contains(e.Body, []byte(text[1000:1040])) || bytes.Contains(e.Body, []byte(thought[300:340])) {
				t.Errorf("event %d (%s) repeats the streamed text: %.200s", e.Seq, e.Kind, e.Body)
			}
		}
		if updates < 4 || recorded > 400*updates {
			t.Errorf("%d message records of %d bytes in all, want several partial saves, each well under the reply's %d bytes", updates, recorded, len(text))
		}
		r, err := projection.Verify(ctx, s, sid)
		if err != nil || !r.OK() || r.Messages != 2 {
			t.Fatalf("verify: %v %+v", err, r)
		}
		st, _, err := projection.Load(ctx, s, sid)
		if err != nil || st.Messages[1].Content != text || st.Messages[1].Reasoning != thought {
			t.Fatalf("rebuilt reply differs: %v", err)
		}

		// The retention prunes the frames: the reply's text is no longer
		// in the log, and verify says so instead of failing.
		if n, err := s.PruneEvents(ctx, time.Now().Add(time.Minute)); err != nil || n == 0 {
			t.Fatalf("prune: %d, %v", n, err)
		}
		r, err = projection.Verify(ctx, s, sid)
		if err != nil || !r.OK() || r.Pruned != 1 {
			t.Fatalf("verify after pruning the frames: %v %+v", err, r)
		}
	})
}
