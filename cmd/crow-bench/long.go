package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/persistence/persistencetest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// longTurns is the length of the session built through the binary: every
// turn a short prompt and a streamed reply of 4,000 characters, as an
// editor's long thread has them.
const longTurns = 1000

// longReply is turn i's reply: varied prose (persistencetest.Prose, so that
// the bytes stored per conversation byte are not those of a repeated line,
// which compresses to nothing) streamed as real providers do, about a token
// (4 characters) a chunk.
func longReply(i int) fakemodel.Reply {
	text := persistencetest.Prose(uint64(i), 4000)
	return fakemodel.Reply{Text: text, Chunks: len(text) / 4}
}

// longMessages is the length of the session written straight to the store.
const longMessages = 10_000

// longCase is one long session, each in a database of its own so that its
// size is the session's alone.
type longCase struct {
	name  string
	db    string
	id    string
	build time.Duration
	how   string
	env   []string // the settings of every process that opens it
}

// longFigures is what a long session costs.
type longFigures struct {
	conversation, size int64 // text bytes of its messages; database bytes
	growthPerLoad      int64 // a new process loading it
	growthPerReload    int64 // one more load by a process that has it open
	load, nextTurn     time.Duration
}

// benchLongSessions measures what long sessions cost: one of 1,000 turns
// made through the binary (its frames journaled as a client saw them) and
// one of 10,000 messages of ~1 KiB written straight to the store, the older
// half compacted. For each: session/load in a new process (request to
// response, the whole replay read), the next turn's overhead beyond the
// model after it, the database's bytes per conversation byte, and how much
// one load grows the database (runs processes only load, then runs more
// load and prompt).
func benchLongSessions(bin, modelURL, dsn, cwd string, runs int, direct rawStream) error {
	ctx := context.Background()
	var cases []longCase
	var kind string
	for _, name := range []string{"turns", "messages"} {
		dir := filepath.Join(cwd, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		db, k, cleanup, err := benchDB(dsn, dir)
		if err != nil {
			return err
		}
		defer cleanup()
		kind = k
		cases = append(cases, longCase{name: name, db: db})
	}
	// The turns run with a 32,000-token window so that compaction runs as
	// in a long thread; the 10,000 messages keep the model's default window
	// (the compacted half leaves 5,001 active messages to rebuild).
	cases[0].env = []string{"CROW_CONTEXT_WINDOW=32000"}

	turns := &cases[0]
	start := time.Now()
	id, err := buildTurns(ctx, bin, *turns, cwd, longTurns)
	if err != nil {
		return fmt.Errorf("build a %d-turn session: %w", longTurns, err)
	}
	turns.id, turns.build, turns.how = id, time.Since(start), fmt.Sprintf("%d prompts through crow-acp", longTurns)

	msgs := &cases[1]
	s, err := backend.Open(ctx, msgs.db)
	if err != nil {
		return err
	}
	start = time.Now()
	err = persistencetest.FillLongSession(ctx, s, "long", longMessages)
	s.Close()
	if err != nil {
		return fmt.Errorf("fill a %d-message session: %w", longMessages, err)
	}
	msgs.id, msgs.build, msgs.how = "long", time.Since(start), "20 appends of 500"

	paced, err := measurePaced(ctx, bin, dsn, cwd)
	if err != nil {
		return fmt.Errorf("paced session: %w", err)
	}

	var figs []longFigures
	for _, c := range cases {
		f, err := measureLong(ctx, bin, modelURL, c, cwd, runs, direct)
		if err != nil {
			return fmt.Errorf("%s session: %w", c.name, err)
		}
		figs = append(figs, f)
	}

	fmt.Printf("\nlong sessions on %s (%d processes load, then %d load and prompt; medians)\n", kind, runs, runs)
	fmt.Printf("  %-36s %14s %14s   target\n", "metric", fmt.Sprintf("%d turns", longTurns), fmt.Sprintf("%d messages", longMessages))
	row := func(name string, val func(c longCase, f longFigures) string, target string) {
		fmt.Printf("  %-36s %14s %14s   %s\n", name, val(cases[0], figs[0]), val(cases[1], figs[1]), target)
	}
	row("building it", func(c longCase, _ longFigures) string { return c.build.Round(time.Millisecond).String() }, "("+cases[0].how+"; "+cases[1].how+")")
	row("conversation (text bytes)", func(_ longCase, f longFigures) string { return mb(f.conversation) }, "")
	row("database", func(_ longCase, f longFigures) string { return mb(f.size) }, "")
	row("database bytes per conversation byte", func(_ longCase, f longFigures) string {
		return strconv.FormatFloat(ratio(f.size, f.conversation), 'f', 2, 64)
	}, "<= 3 for 1,000 turns "+verdict(ratio(figs[0].size, figs[0].conversation) <= 3)+" (issue 30: plain storage)")
	row("database growth per load", func(_ longCase, f longFigures) string { return kb(f.growthPerReload) },
		"<= 1 KB "+verdict(figs[0].growthPerReload <= 1024 && figs[1].growthPerReload <= 1024)+" (one process, "+strconv.Itoa(reloads)+" loads)")
	row("  by a new process", func(_ longCase, f longFigures) string { return kb(f.growthPerLoad) }, "(with its connection's initialize and record)")
	row("session/load incl. replay", func(_ longCase, f longFigures) string { return f.load.Round(100 * time.Microsecond).String() },
		"<= 150ms for 10,000 messages "+verdict(figs[1].load <= 150*time.Millisecond))
	row("next turn beyond the model", func(_ longCase, f longFigures) string { return f.nextTurn.Round(100 * time.Microsecond).String() }, "(context rebuild, request upload)")
	fmt.Printf("  streamed at a real provider's pace (%d ms a %d-character chunk, ~%d tokens/s; %d turns of %d characters after a warm-up turn):\n",
		pacedChunkDelayMS, pacedChunkChars, 1000/pacedChunkDelayMS, pacedTurns, pacedReplyChars)
	fmt.Printf("  %-36s %14s %14s   <= 2 %s (growth over those turns)\n", "  database bytes per conversation byte",
		strconv.FormatFloat(ratio(paced.growth, paced.conversation), 'f', 2, 64), "", verdict(ratio(paced.growth, paced.conversation) <= 2))
	fmt.Printf("  %-36s %14s %14s   (frame events; message_updated records)\n", "  events per turn",
		fmt.Sprintf("%.1f; %.1f", float64(paced.frameEvents)/pacedTurns, float64(paced.updates)/pacedTurns), "")
	return nil
}

// The paced session: replies streamed as a fast real provider does, about a
// token (4 characters) every 4 ms. An instant stream is one commit a reply;
// at a real pace what the log and the reply's saves write per second of
// streaming is what counts. Its turns take ~2 s each.
const (
	pacedTurns        = 12
	pacedReplyChars   = 2000
	pacedChunkChars   = 4
	pacedChunkDelayMS = 4
)

// pacedFigures is what a paced session's measured turns added.
type pacedFigures struct {
	conversation, growth int64 // text bytes added; database bytes added
	frameEvents, updates int   // session/update events and message_updated records added
}

// measurePaced streams a warm-up turn and then pacedTurns turns at
// pacedChunkDelayMS a chunk through the binary, in a database of its own,
// and measures what those turns added (from after the warm-up: the fixed
// pages of an empty database do not count).
func measurePaced(ctx context.Context, bin, dsn, cwd string) (pacedFigures, error) {
	var f pacedFigures
	dir := filepath.Join(cwd, "paced")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	db, _, cleanup, err := benchDB(dsn, dir)
	if err != nil {
		return f, err
	}
	defer cleanup()
	srv := fakemodel.Start()
	defer srv.Close()
	p, sess, err := startSession(ctx, bin, srv.URL(), longCase{db: db}, cwd)
	if err != nil {
		return f, err
	}
	defer p.close()
	type state struct {
		conversation, size   int64
		frameEvents, updates int
	}
	measure := func() (st state, err error) {
		if st.conversation, err = conversationBytes(ctx, db, sess.SessionID); err != nil {
			return st, err
		}
		if st.size, err = dbBytes(ctx, db); err != nil {
			return st, err
		}
		st.frameEvents, st.updates, err = countEvents(ctx, db, sess.SessionID)
		return st, err
	}
	var before state
	for i := 0; i <= pacedTurns; i++ {
		n := pacedReplyChars
		if i == 0 {
			n /= 5 // the warm-up: the first pages of every table
		}
		text := persistencetest.Prose(uint64(i), n)
		srv.SetFallback(fakemodel.Reply{Text: text, Chunks: len(text) / pacedChunkChars, DelayMS: pacedChunkDelayMS})
		if _, err := p.prompt(ctx, sess.SessionID, "turn "+strconv.Itoa(i)+": go on with the work"); err != nil {
			return f, fmt.Errorf("turn %d: %w", i+1, err)
		}
		if i == 0 {
			if before, err = measure(); err != nil {
				return f, err
			}
		}
	}
	after, err := measure()
	if err != nil {
		return f, err
	}
	return pacedFigures{conversation: after.conversation - before.conversation, growth: after.size - before.size,
		frameEvents: after.frameEvents - before.frameEvents, updates: after.updates - before.updates}, nil
}

// countEvents counts a session's session/update frame events and
// message_updated records.
func countEvents(ctx context.Context, db, id string) (frameEvents, updates int, err error) {
	s, err := backend.Open(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	evs, err := s.Events(ctx, id, persistence.EventFilter{})
	if err != nil {
		return 0, 0, err
	}
	for _, e := range evs {
		switch {
		case e.Method == "session/update":
			frameEvents++
		case e.Kind == persistence.EventMessageUpdated:
			updates++
		}
	}
	return frameEvents, updates, nil
}

// startSession starts the binary on c's database against modelURL and
// opens a new session in cwd (the caller closes the process).
func startSession(ctx context.Context, bin, modelURL string, c longCase, cwd string) (*agentProc, *acp.NewSessionResponse, error) {
	p, err := startAgent(longCommand(bin, modelURL, c))
	if err != nil {
		return nil, nil, err
	}
	if err := p.initialize(ctx); err != nil {
		p.close()
		return nil, nil, err
	}
	sess, err := p.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		p.close()
		return nil, nil, fmt.Errorf("session/new: %w", err)
	}
	return p, sess, nil
}

// buildTurns makes a session of n turns through the binary against a model
// server of its own (it keeps every request).
func buildTurns(ctx context.Context, bin string, c longCase, cwd string, n int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	srv := fakemodel.Start()
	defer srv.Close()
	p, sess, err := startSession(ctx, bin, srv.URL(), c, cwd)
	if err != nil {
		return "", err
	}
	defer p.close()
	for i := 0; i < n; i++ {
		// The fallback, not a queued reply: a compaction's summary request
		// during the turn gets it too.
		srv.SetFallback(longReply(i))
		if _, err := p.prompt(ctx, sess.SessionID, "turn "+strconv.Itoa(i)+": go on with the work"); err != nil {
			return "", fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	return sess.SessionID, nil
}

func longCommand(bin, modelURL string, c longCase) *exec.Cmd {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+modelURL, "OPENAI_API_KEY=", "CROW_MODEL=bench",
		"CROW_DB="+c.db, "CROW_LOG_LEVEL=error")
	cmd.Env = append(cmd.Env, c.env...)
	return cmd
}

func measureLong(ctx context.Context, bin, modelURL string, c longCase, cwd string, runs int, direct rawStream) (longFigures, error) {
	var f longFigures
	var err error
	if f.conversation, err = conversationBytes(ctx, c.db, c.id); err != nil {
		return f, err
	}
	if f.size, err = dbBytes(ctx, c.db); err != nil {
		return f, err
	}
	var loadT, overT []time.Duration
	for i := 0; i < runs; i++ {
		load, _, _, err := loadAndPrompt(bin, modelURL, c, cwd, -1, direct)
		if err != nil {
			return f, fmt.Errorf("load %d: %w", i+1, err)
		}
		loadT = append(loadT, load)
	}
	after, err := dbBytes(ctx, c.db)
	if err != nil {
		return f, err
	}
	f.growthPerLoad = (after - f.size) / int64(runs)
	// Editors reopen threads in a running agent: loads by one process,
	// without a new connection's own frames (initialize, its record).
	if err := reload(bin, modelURL, c, cwd, reloads); err != nil {
		return f, err
	}
	reloaded, err := dbBytes(ctx, c.db)
	if err != nil {
		return f, err
	}
	f.growthPerReload = (reloaded - after) / reloads
	for i := 0; i < runs; i++ {
		load, turn, model, err := loadAndPrompt(bin, modelURL, c, cwd, i, direct)
		if err != nil {
			return f, fmt.Errorf("load and prompt %d: %w", i+1, err)
		}
		loadT = append(loadT, load)
		overT = append(overT, turn-model)
	}
	f.load, f.nextTurn = median(loadT), median(overT)
	return f, nil
}

// reloads is how many times one process loads a session to measure what a
// load adds (SQLite grows by 4 KiB pages: many loads make the figure exact
// to ~200 bytes).
const reloads = 20

// reload loads c's session n times in one process (one connection).
func reload(bin, modelURL string, c longCase, cwd string, n int) error {
	p, err := startAgent(longCommand(bin, modelURL, c))
	if err != nil {
		return err
	}
	defer p.close()
	ctx := context.Background()
	if err := p.initialize(ctx); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := p.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: c.id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
			return fmt.Errorf("session/load %d: %w", i+1, err)
		}
	}
	return nil
}

// loadAndPrompt loads c's session in a new process and then, unless i < 0,
// sends one prompt; model is the model's own time for that prompt.
func loadAndPrompt(bin, modelURL string, c longCase, cwd string, i int, direct rawStream) (load, turn, model time.Duration, err error) {
	id := c.id
	p, err := startAgent(longCommand(bin, modelURL, c))
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.close()
	ctx := context.Background()
	if err := p.initialize(ctx); err != nil {
		return 0, 0, 0, err
	}
	t := time.Now()
	if _, err := p.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		return 0, 0, 0, fmt.Errorf("session/load: %w", err)
	}
	load = time.Since(t)
	if i < 0 {
		return load, 0, 0, nil
	}
	if model, err = directStreamTime(direct); err != nil {
		return 0, 0, 0, err
	}
	t = time.Now()
	if _, err := p.prompt(ctx, id, "after load "+strconv.Itoa(i)); err != nil {
		return 0, 0, 0, err
	}
	return load, time.Since(t), model, nil
}

// conversationBytes is the text of a session's conversation: every
// message's content, reasoning and tool-call arguments (compaction
// summaries are derived, not conversation).
func conversationBytes(ctx context.Context, db, id string) (int64, error) {
	s, err := backend.Open(ctx, db)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	msgs, err := s.Messages(ctx, id, persistence.MessageFilter{})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range msgs {
		if m.Role == persistence.RoleSummary {
			continue
		}
		n += int64(len(m.Content) + len(m.Reasoning))
		for _, c := range m.ToolCalls {
			n += int64(len(c.Arguments))
		}
	}
	return n, nil
}

// dbBytes is the space a database's data takes: for SQLite the pages in use
// once the WAL is checkpointed into the file, for PostgreSQL the tables of
// the bench's schema with their indexes and TOAST.
func dbBytes(ctx context.Context, db string) (int64, error) {
	k, err := backend.Parse(db)
	if err != nil {
		return 0, err
	}
	if k == backend.Postgres {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		var n int64
		err = conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
		return n, err
	}
	return persistencetest.SQLitePagesInUse(ctx, db)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mb(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB" }

func kb(n int64) string {
	if n < 0 {
		n = 0 // pages freed by a checkpoint
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1024, 'f', 1, 64), ".0") + " KB"
}
