// Command crow-bench measures crow-acp end to end: the real binary over real
// stdio against the bundled fake model server on 127.0.0.1.
//
// It reports spawn→initialize, session/new, turn overhead beyond the model's
// own time (a turn through crow-acp minus the time to fetch the same stream's
// bytes just before it), and
// peak RSS, each as a median over -runs processes, next to the targets; then
// what long sessions cost (long.go): load, the next turn, database size per
// conversation byte and growth per load, and the database growth of replies
// streamed at a real provider's pace.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func main() {
	bin := flag.String("bin", "bin/crow-acp", "crow-acp binary to measure")
	runs := flag.Int("runs", 15, "processes to start (each: initialize, session/new, turns)")
	turns := flag.Int("turns", 5, "prompt turns per process")
	db := flag.String("db", "", "store to measure: empty for a fresh SQLite file, or a postgres:// URL (a fresh schema is used and dropped)")
	longRuns := flag.Int("long-runs", 5, "processes loading each long session (1,000 turns, 10,000 messages), and as many loading it and prompting")
	initRuns := flag.Int("init-runs", 0, "more processes that only answer initialize, each after one of the empty agent: medians of many starts, for changes smaller than the noise of -runs")
	keep := flag.Bool("keep", false, "keep the temporary directory (the databases) and PostgreSQL schemas, and print where they are")
	flag.Parse()
	keepDir, extraInitRuns = keep, *initRuns
	if err := runBench(*bin, *runs, *turns, *db, *longRuns); err != nil {
		fmt.Fprintln(os.Stderr, "crow-bench:", err)
		os.Exit(1)
	}
}

// extraInitRuns is the -init-runs flag.
var extraInitRuns int

// The scripted reply: 200 chunks of 20 characters, no delay.
func reply() fakemodel.Reply {
	return fakemodel.Reply{Text: strings.Repeat("abcdefghijklmnopqrs ", 200), Chunks: 200}
}

// runBench measures bin over runs processes, then the long sessions, and
// prints each figure next to its target.
func runBench(bin string, runs, turns int, dsn string, longRuns int) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("binary %s: %w (run make build first)", bin, err)
	}
	srv := fakemodel.Start()
	defer srv.Close()
	srv.SetFallback(reply())

	dir, err := os.MkdirTemp("", "crow-bench-")
	if err != nil {
		return err
	}
	if *keepDir {
		fmt.Fprintln(os.Stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	db, kind, cleanup, err := benchDB(dsn, dir)
	if err != nil {
		return err
	}
	defer cleanup()

	direct := rawStream{url: srv.URL() + "/chat/completions", client: &http.Client{}}

	// Memory depends on how the executable's pages came into the page
	// cache: this kernel (6.18 and later) maps a large folio whole, and the
	// build's writes leave the file in 2 MB folios, so nearly the whole
	// executable counts as resident right after a build. Pages read in by
	// exec itself (after a reboot, or once evicted) are mapped as used.
	// The first process runs on the binary as the build left it; then the
	// file is evicted from the page cache and the measured runs page it in.
	asBuilt, err := oneProcess(bin, srv.URL(), db, dir, turns, direct, "bench")
	if err != nil {
		return fmt.Errorf("first run: %w", err)
	}
	evicted := evictPageCache(bin)
	empty, err := buildEmptyAgent(dir)
	if err != nil {
		return fmt.Errorf("build the empty agent: %w", err)
	}
	if _, _, err := initOnly(empty); err != nil { // warms its pages, as the first run above did crow-acp's
		return fmt.Errorf("empty agent: %w", err)
	}

	var emptyT, emptyCPU, initT, initCPU, newT, turnT, modelT, overT, cpuT []time.Duration
	var rss, anon, file []int
	var benchSession string
	for i := 0; i < runs; i++ {
		r, err := oneProcess(bin, srv.URL(), db, dir, turns, direct, "bench")
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		benchSession = r.sessionID
		initT = append(initT, r.initialize)
		initCPU = append(initCPU, r.initCPU)
		// The floor, measured between crow-acp's runs so both see the
		// same machine load.
		e, c, err := initOnly(empty)
		if err != nil {
			return fmt.Errorf("empty agent: %w", err)
		}
		emptyT, emptyCPU = append(emptyT, e), append(emptyCPU, c)
		newT = append(newT, r.newSession)
		turnT = append(turnT, r.turns...)
		modelT = append(modelT, r.model...)
		for j := range r.turns {
			overT = append(overT, r.turns[j]-r.model[j])
		}
		cpuT = append(cpuT, r.turnCPU)
		rss = append(rss, r.peakRSSKiB)
		anon = append(anon, r.anonKiB)
		file = append(file, r.fileKiB)
	}
	overhead := median(overT)
	fmt.Printf("crow-acp end-to-end on %s (%d processes, %d turns each, reply = 200 chunks x 20 chars)\n", kind, runs, turns)
	fmt.Printf("  %-34s %10s   target\n", "metric (median)", "value")
	row := func(name string, v time.Duration, target time.Duration) {
		fmt.Printf("  %-34s %10s   <= %s %s\n", name, v.Round(10*time.Microsecond), target, verdict(v <= target))
	}
	row("spawn -> initialize response", median(initT), 10*time.Millisecond)
	floor := median(emptyT)
	fmt.Printf("  %-34s %10s   (crow-acp takes %.1fx; target <= 2x %s)\n", "  empty agent (floor)", floor.Round(10*time.Microsecond),
		float64(median(initT))/float64(floor), verdict(median(initT) <= 2*floor))
	// CPU time moves far less than wall time on a busy machine.
	if c, e := median(initCPU), median(emptyCPU); c > 0 && e > 0 {
		fmt.Printf("  %-34s %10s   (empty agent %s: %.1fx)\n", "  CPU time until answered", c.Round(10*time.Microsecond), e.Round(10*time.Microsecond), float64(c)/float64(e))
	}
	if extraInitRuns > 0 {
		if err := manyInits(bin, empty, benchEnv(srv.URL(), db, "bench"), extraInitRuns); err != nil {
			return err
		}
	}
	row("session/new", median(newT), 5*time.Millisecond)
	fmt.Printf("  %-34s %10s\n", "turn (prompt -> response)", median(turnT).Round(10*time.Microsecond))
	fmt.Printf("  %-34s %10s\n", "model stream fetched (bytes only)", median(modelT).Round(10*time.Microsecond))
	row("turn overhead beyond the model", overhead, 4*time.Millisecond)
	if c := median(cpuT); c > 0 {
		fmt.Printf("  %-34s %10s   (all threads; steadier than wall time on a busy machine)\n", "crow-acp CPU time per turn", c.Round(10*time.Microsecond))
	}
	sort.Ints(rss)
	peak := rss[len(rss)-1]
	if evicted != nil {
		fmt.Printf("  (could not evict %s from the page cache: %v; RSS below is as the build left it)\n", bin, evicted)
	}
	fmt.Printf("  %-34s %8.1f MB   <= 30 MB %s\n", "peak RSS (max over processes)", float64(peak)/1024, verdict(peak <= 30*1024))
	sort.Ints(anon)
	sort.Ints(file)
	fmt.Printf("  %-34s %8.1f MB   (heap, stacks, SQLite cache)\n", "  of which private (RssAnon, max)", float64(anon[len(anon)-1])/1024)
	fmt.Printf("  %-34s %8.1f MB   (the executable's pages, paged in by exec)\n", "  of which mapped binary (RssFile)", float64(file[len(file)-1])/1024)
	fmt.Printf("  %-34s %8.1f MB   (%.1f MB mapped binary; right after go build, its 2 MB page-cache folios are mapped whole)\n", "peak RSS, first run as found", float64(asBuilt.peakRSSKiB)/1024, float64(asBuilt.fileKiB)/1024)
	// An OpenAI model name loads the exact o200k vocabulary (the runs above
	// use the estimator, as for local models).
	r, err := oneProcess(bin, srv.URL(), db, dir, turns, direct, "gpt-4o")
	if err != nil {
		return fmt.Errorf("gpt-4o run: %w", err)
	}
	fmt.Printf("  %-34s %8.1f MB   (%.1f MB private: the o200k vocabulary)\n", "peak RSS, model gpt-4o", float64(r.peakRSSKiB)/1024, float64(r.anonKiB)/1024)
	// The floor of session/load: a short session loaded by new processes,
	// with the estimator and with a model whose vocabulary is o200k.
	for _, c := range []struct{ model, id string }{{"bench", benchSession}, {"gpt-4o", r.sessionID}} {
		model := c.model
		var loads []time.Duration
		for i := 0; i < runs; i++ {
			d, err := loadOnly(bin, srv.URL(), db, dir, c.id, model)
			if err != nil {
				return fmt.Errorf("load with %s: %w", model, err)
			}
			loads = append(loads, d)
		}
		fmt.Printf("  %-34s %10s\n", "session/load ("+strconv.Itoa(turns)+" turns), model "+model, median(loads).Round(10*time.Microsecond))
	}
	if longRuns > 0 {
		return benchLongSessions(bin, srv.URL(), dsn, dir, longRuns, direct)
	}
	return nil
}

type result struct {
	sessionID              string
	initialize, newSession time.Duration
	initCPU                time.Duration   // crow-acp's CPU time until initialize was answered (all threads)
	turns, model           []time.Duration // per turn: through crow-acp, and read directly
	turnCPU                time.Duration   // crow-acp's CPU time per turn (all threads)
	peakRSSKiB             int
	anonKiB, fileKiB       int // resident private memory vs mapped binary pages, at the end
}

// benchEnv is the environment of a measured crow-acp process.
func benchEnv(url, db, model string) []string {
	return append(os.Environ(), "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=", "CROW_MODEL="+model,
		"CROW_DB="+db, "CROW_LOG_LEVEL=error")
}

func oneProcess(bin, url, db, cwd string, turns int, direct rawStream, model string) (*result, error) {
	cmd := exec.Command(bin)
	cmd.Env = benchEnv(url, db, model)
	start := time.Now()
	p, err := startAgent(cmd)
	if err != nil {
		return nil, err
	}
	defer p.close()
	ctx := context.Background()
	r := &result{}
	if err := p.initialize(ctx); err != nil {
		return nil, err
	}
	r.initialize = time.Since(start)
	r.initCPU = cpuTime(cmd.Process.Pid)
	t0 := time.Now()
	sess, err := p.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return nil, fmt.Errorf("session/new: %w", err)
	}
	r.newSession = time.Since(t0)
	r.sessionID = sess.SessionID
	cpu0 := cpuTime(cmd.Process.Pid)
	for i := 0; i < turns; i++ {
		d, err := directStreamTime(direct)
		if err != nil {
			return nil, fmt.Errorf("direct stream: %w", err)
		}
		r.model = append(r.model, d)
		t := time.Now()
		if _, err := p.prompt(ctx, sess.SessionID, "turn "+strconv.Itoa(i)); err != nil {
			return nil, err
		}
		r.turns = append(r.turns, time.Since(t))
	}
	r.turnCPU = (cpuTime(cmd.Process.Pid) - cpu0) / time.Duration(turns)
	st := procStatus(cmd.Process.Pid)
	r.peakRSSKiB, r.anonKiB, r.fileKiB = st["VmHWM"], st["RssAnon"], st["RssFile"]
	return r, nil
}

// buildEmptyAgent builds emptyagent, the floor of spawn→initialize, into dir.
func buildEmptyAgent(dir string) (string, error) {
	out := filepath.Join(dir, "emptyagent")
	cmd := exec.Command("go", "build", "-o", out, "github.com/crow-acp/crow-acp/cmd/crow-bench/emptyagent")
	cmd.Stderr = os.Stderr
	return out, cmd.Run()
}

// manyInits prints spawn→initialize of n processes of bin (env: its
// environment), each started after one of the empty agent: the median and
// the first quartile of each, and their CPU time.
func manyInits(bin, empty string, env []string, n int) error {
	var binT, binCPU, emptyT, emptyCPU []time.Duration
	for i := 0; i < n; i++ {
		e, ec, err := initOnly(empty)
		if err != nil {
			return fmt.Errorf("empty agent: %w", err)
		}
		d, c, err := initOnlyEnv(bin, env)
		if err != nil {
			return fmt.Errorf("initialize only, run %d: %w", i+1, err)
		}
		emptyT, emptyCPU = append(emptyT, e), append(emptyCPU, ec)
		binT, binCPU = append(binT, d), append(binCPU, c)
	}
	ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	fmt.Printf("  %-34s %10s   (p25 %s; empty agent %s, p25 %s: %.1fx)\n", fmt.Sprintf("  initialize only, %d processes", n),
		ms(median(binT)), ms(quartile(binT)), ms(median(emptyT)), ms(quartile(emptyT)), float64(median(binT))/float64(median(emptyT)))
	fmt.Printf("  %-34s %10s   (p25 %s; empty agent %s: %.1fx)\n", "    CPU time until answered", ms(median(binCPU)), ms(quartile(binCPU)),
		ms(median(emptyCPU)), float64(median(binCPU))/float64(median(emptyCPU)))
	return nil
}

// initOnly is spawn→initialize response of bin, which is then closed, and
// the CPU time bin took until then.
func initOnly(bin string) (time.Duration, time.Duration, error) {
	return initOnlyEnv(bin, nil)
}

// initOnlyEnv is initOnly with the environment env (nil: this process's).
func initOnlyEnv(bin string, env []string) (time.Duration, time.Duration, error) {
	cmd := exec.Command(bin)
	cmd.Env = env
	start := time.Now()
	p, err := startAgent(cmd)
	if err != nil {
		return 0, 0, err
	}
	defer p.close()
	if err := p.initialize(context.Background()); err != nil {
		return 0, 0, err
	}
	return time.Since(start), cpuTime(cmd.Process.Pid), nil
}

// loadOnly is session/load of session id in a new process (request to
// response).
func loadOnly(bin, url, db, cwd, id, model string) (time.Duration, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=", "CROW_MODEL="+model,
		"CROW_DB="+db, "CROW_LOG_LEVEL=error")
	p, err := startAgent(cmd)
	if err != nil {
		return 0, err
	}
	defer p.close()
	ctx := context.Background()
	if err := p.initialize(ctx); err != nil {
		return 0, err
	}
	t := time.Now()
	if _, err := p.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		return 0, fmt.Errorf("session/load: %w", err)
	}
	return time.Since(t), nil
}

// cpuTime is the CPU time the process's threads have run, from
// /proc/PID/task/*/schedstat (nanoseconds; 0 where unavailable). Unlike wall
// time it hardly moves with the machine's load.
func cpuTime(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(n)
		}
	}
	return total
}

// procStatus reads the kB fields of /proc/PID/status (empty where /proc is
// unavailable).
func procStatus(pid int) map[string]int {
	out := map[string]int{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if ok && len(f) == 2 && f[1] == "kB" {
			out[name], _ = strconv.Atoi(f[0])
		}
	}
	return out
}
