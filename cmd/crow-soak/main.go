// Command crow-soak drives one crow-acp process (the real binary over real
// stdio) with many sessions and turns at once against the fake model server
// on 127.0.0.1, then reports errors (which must be 0), throughput, RSS and
// goroutines before and after. It exits 1 on any error, on a reply that
// arrived altered, or when goroutines do not come back to where they were.
//
// The run is bounded: -sessions x -turns prompts, at most -concurrency at a
// time, and -timeout overall.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
	"github.com/crow-acp/crow-acp/internal/syncbuf"
)

func main() {
	bin := flag.String("bin", "bin/crow-acp", "crow-acp binary to drive")
	sessions := flag.Int("sessions", 48, "sessions to create")
	turns := flag.Int("turns", 8, "prompt turns per session")
	concurrency := flag.Int("concurrency", 8, "sessions running a turn at once")
	timeout := flag.Duration("timeout", 3*time.Minute, "bound on the whole run")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := soak(ctx, *bin, *sessions, *turns, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "crow-soak:", err)
		os.Exit(1)
	}
}

// poolSlack is what the model client's keep-alive pool may hold on to
// between rounds: up to 2 idle connections to the endpoint (net/http's
// default per host), 2 goroutines each. A leak grows with the work done;
// 384 turns would leave hundreds.
const poolSlack = 4

// The scripted reply: 100 chunks of 12 characters, so every turn streams
// and stores a real reply.
var replyText = strings.Repeat("soak reply. ", 100)

type stats struct {
	Goroutines     int    `json:"goroutines"`
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
	RunningTurns   int    `json:"runningTurns"`
}

func soak(ctx context.Context, bin string, nSessions, nTurns, concurrency int) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("binary %s: %w (run make build first)", bin, err)
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	srv := fakemodel.Start() // 127.0.0.1 only
	defer srv.Close()
	srv.SetFallback(fakemodel.Reply{Text: replyText, Chunks: 100})

	dir, err := os.MkdirTemp("", "crow-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	a, err := start(bin, srv.URL(), dir, concurrency)
	if err != nil {
		return err
	}
	defer a.stop()

	if _, err := a.conn.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion,
		ClientInfo: &acp.Implementation{Name: "crow-soak", Version: "1"}}); err != nil {
		return a.failed(fmt.Errorf("initialize: %w", err))
	}
	// Warm up (first session, first turn: lazy set-up happens here), then
	// take the baseline.
	if err := a.session(ctx, dir, 1); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	before, err := a.settled(ctx)
	if err != nil {
		return err
	}
	rssBefore := rssKiB(a.cmd.Process.Pid)

	var errCount atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errCount.Add(1)
		errOnce.Do(func() { firstErr = err })
	}
	// Two rounds of the same work: the process may grow to a working set
	// in the first (connection pools, caches), but a second round that
	// leaves more goroutines or memory behind is a leak.
	round := func(n int) {
		work := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < concurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range work {
					if err := a.session(ctx, dir, nTurns); err != nil {
						fail(err)
					}
				}
			}()
		}
		for i := 0; i < n; i++ {
			select {
			case work <- i:
			case <-ctx.Done():
			}
		}
		close(work)
		wg.Wait()
	}
	// settle waits for the goroutines of finished turns to end.
	startT := time.Now()
	round(nSessions / 2)
	mid, err := a.settled(ctx)
	if err != nil {
		return err
	}
	rssMid := rssKiB(a.cmd.Process.Pid)
	round(nSessions - nSessions/2)
	elapsed := time.Since(startT)
	after, err := a.settled(ctx)
	if err != nil {
		return err
	}
	rssAfter, peak := rssKiB(a.cmd.Process.Pid), peakKiB(a.cmd.Process.Pid)
	if err := a.close(); err != nil {
		fail(err)
	}

	total := nSessions * nTurns
	fmt.Printf("crow-acp soak: one process, %d sessions x %d turns (%d prompts), %d at once, fake model on 127.0.0.1\n",
		nSessions, nTurns, total, concurrency)
	fmt.Printf("  %-28s %12d   must be 0 %s\n", "errors", errCount.Load(), verdict(errCount.Load() == 0))
	fmt.Printf("  %-28s %12s   (%.0f turns/s; %d cancelled mid-stream)\n", "duration", elapsed.Round(time.Millisecond),
		float64(total)/elapsed.Seconds(), a.cancels.Load())
	fmt.Printf("  %-28s %9.1f MB -> %.1f MB -> %.1f MB (round 2 growth %+.1f MB, peak %.1f MB)\n",
		"RSS before -> mid -> after", mb(rssBefore), mb(rssMid), mb(rssAfter), mb(rssAfter-rssMid), mb(peak))
	fmt.Printf("  %-28s %9.1f MB -> %.1f MB -> %.1f MB\n", "Go heap before -> mid -> after",
		heapMB(before), heapMB(mid), heapMB(after))
	leak := after.Goroutines > max(before.Goroutines, mid.Goroutines)+poolSlack
	fmt.Printf("  %-28s %12s   at most %d over the baseline %s\n", "goroutines before/mid/after",
		fmt.Sprintf("%d / %d / %d", before.Goroutines, mid.Goroutines, after.Goroutines), poolSlack, verdict(!leak))
	switch {
	case firstErr != nil:
		return fmt.Errorf("%d sessions failed; first: %w", errCount.Load(), firstErr)
	case leak:
		return fmt.Errorf("goroutines grew from %d (%d after round 1) to %d", before.Goroutines, mid.Goroutines, after.Goroutines)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

func mb(kib int) float64 { return float64(kib) / 1024 }

func heapMB(s stats) float64 { return float64(s.HeapAllocBytes) / (1 << 20) }

// agent is the crow-acp process and the ACP client connection that
// multiplexes concurrent sessions over its stdio.
type agent struct {
	acp.UnimplementedClient // no fs, no terminal: the soak asks for no tools

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr syncbuf.Buffer
	conn   *acp.ClientConn

	mu      sync.Mutex
	streams map[string]*stream // the turn streaming in each session
	cancels atomic.Int64       // turns that ended cancelled
}

func start(bin, modelURL, dir string, concurrency int) (*agent, error) {
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{
		"HOME=" + dir, "XDG_CONFIG_HOME=" + dir,
		"OPENAI_BASE_URL=" + modelURL, "OPENAI_API_KEY=", "CROW_MODEL=soak",
		"CROW_DB=" + filepath.Join(dir, "soak.db"), "CROW_LOG_LEVEL=error",
		"CROW_MAX_CONCURRENT_SESSIONS=" + strconv.Itoa(concurrency),
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	a := &agent{cmd: cmd, stdin: stdin, streams: make(map[string]*stream)}
	cmd.Stderr = &a.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a.conn = acp.NewClientConn(stdout, stdin, a, acp.Options{})
	return a, nil
}

// SessionUpdate collects each turn's streamed text and cancels the turns
// marked for it as soon as their reply starts, as a user does.
func (a *agent) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	c := n.Update.AgentMessageChunk
	if c == nil || c.Content.Text == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.streams[n.SessionID]
	if st == nil {
		return nil
	}
	st.text.WriteString(c.Content.Text.Text)
	if st.cancel && !st.sent {
		// Written off the read loop so reading never waits on writing.
		st.sent = true
		written := make(chan struct{})
		st.cancelWritten = written
		go func(sid string) {
			defer close(written)
			_ = a.conn.Cancel(context.Background(), &acp.CancelNotification{SessionID: sid})
		}(n.SessionID)
	}
	return nil
}

// failed adds crow-acp's stderr to an error that came from it going away.
func (a *agent) failed(err error) error {
	if errors.Is(err, acp.ErrAgentGone) {
		return fmt.Errorf("%w\n%s", err, a.stderr.String())
	}
	return err
}

// session creates a session, runs turns in it, checks every streamed reply
// arrived whole, and loads it back.
func (a *agent) session(ctx context.Context, cwd string, turns int) error {
	s, err := a.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return a.failed(fmt.Errorf("session/new: %w", err))
	}
	if s.SessionID == "" {
		return errors.New("session/new: no session id")
	}
	for t := 0; t < turns; t++ {
		// Every fourth turn is cancelled as soon as its reply starts.
		st := &stream{cancel: t%4 == 3}
		a.mu.Lock()
		a.streams[s.SessionID] = st
		a.mu.Unlock()
		res, err := a.conn.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID,
			Prompt: []acp.ContentBlock{acp.TextBlock("turn " + strconv.Itoa(t))}})
		if err != nil {
			return a.failed(fmt.Errorf("session/prompt: %w", err))
		}
		a.mu.Lock()
		got := st.text.String()
		written := st.cancelWritten
		delete(a.streams, s.SessionID)
		a.mu.Unlock()
		// A cancel still being written when the turn ended (a fast turn
		// can end first) must not land on the next turn.
		if written != nil {
			<-written
		}
		switch {
		case res.StopReason == acp.StopEndTurn:
			if got != replyText {
				return fmt.Errorf("session %s turn %d: streamed %d bytes, want %d", s.SessionID, t, len(got), len(replyText))
			}
		case st.cancel && res.StopReason == acp.StopCancelled:
			a.cancels.Add(1)
			if !strings.HasPrefix(replyText, got) {
				return fmt.Errorf("session %s turn %d: cancelled reply is not a prefix of the reply", s.SessionID, t)
			}
		default:
			return fmt.Errorf("turn %d ended with %q", t, res.StopReason)
		}
	}
	if _, err := a.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: s.SessionID, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		return a.failed(fmt.Errorf("session/load: %w", err))
	}
	return nil
}

type stream struct {
	text          strings.Builder
	cancel, sent  bool
	cancelWritten chan struct{} // closed once the cancel is written; nil if none was sent
}

// settled waits until no turn runs and the goroutine count holds still for
// 100ms (ended turns' goroutines take a moment to exit), up to 2s.
func (a *agent) settled(ctx context.Context) (stats, error) {
	prev, err := a.stats(ctx)
	for i, still := 0, 0; err == nil && i < 100 && still < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		var st stats
		if st, err = a.stats(ctx); err != nil {
			break
		}
		if st.Goroutines == prev.Goroutines && st.RunningTurns == 0 {
			still++
		} else {
			still = 0
		}
		prev = st
	}
	return prev, err
}

func (a *agent) stats(ctx context.Context) (stats, error) {
	var st stats
	if err := a.conn.Call(ctx, "_crow/debug/stats", struct{}{}, &st); err != nil {
		return st, a.failed(fmt.Errorf("_crow/debug/stats: %w", err))
	}
	return st, nil
}

// close ends the session like an editor does (stdin closes) and checks the
// process exits cleanly.
func (a *agent) close() error {
	_ = a.stdin.Close()
	<-a.conn.Done()
	_ = a.conn.Close()
	errc := make(chan error, 1)
	go func() { errc <- a.cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("crow-acp exited with %v\n%s", err, a.stderr.String())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		return errors.New("crow-acp did not exit within 30s of stdin closing")
	}
}

func (a *agent) stop() {
	if a.cmd.ProcessState == nil {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
	}
}

func procStatus(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func rssKiB(pid int) int  { return procStatus(pid, "VmRSS") }
func peakKiB(pid int) int { return procStatus(pid, "VmHWM") }
