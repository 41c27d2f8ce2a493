package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// BenchmarkUncompactedTurnHistory is issue 19's per-turn overhead at the
// start and at the end of an uncompacted 1,000-turn session (replies of
// 4,000 characters, a window too large to ever compact): one prompt turn
// through the agent, its real SQLite store and model client, against an
// endpoint on loopback that only discards the request and streams a canned
// reply. The model's own time is the same in both, so the difference
// between history=10 and history=1000 is what 990 turns of stored history
// add to each turn (target: at most 5 ms).
func BenchmarkUncompactedTurnHistory(b *testing.B) {
	for _, turns := range []int{10, 1000} {
		b.Run(fmt.Sprintf("history=%d", turns), func(b *testing.B) { benchTurnAfter(b, turns) })
	}
}

// historyReply is the benchmark's reply: 4,000 characters.
var historyReply = strings.Repeat("The parser now rejects empty input; a test covers it. ", 80)[:4000]

func benchTurnAfter(b *testing.B, turns int) {
	ctx := context.Background()
	url := cannedEndpoint(b, historyReply)
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "crow.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	model := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: url, APIKey: "sk-bench"})
	a := New(&recorder{}, store, model, Config{Models: []request.Model{{Name: "gpt-4o-mini", ContextWindow: 1 << 30}}}, nil)
	defer a.Close()
	cwd := b.TempDir()
	counter := a.build.CounterFor(a.models.Named("gpt-4o-mini"))
	replyTokens := compaction.MessageTokens(counter, &persistence.Message{Role: persistence.RoleAssistant, Content: historyReply})
	var sid string
	// A fresh session with the history every 10 turns: the history stays
	// near its size however many turns the benchmark runs.
	fresh := func() {
		if sid != "" {
			if _, err := a.CloseSession(ctx, &acp.CloseSessionRequest{SessionID: sid}); err != nil {
				b.Fatal(err)
			}
		}
		s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		sid = s.SessionID
		// Stored counted, as turns store them.
		msgs := make([]*persistence.Message, 0, 2*turns)
		for i := range turns {
			msgs = append(msgs,
				&persistence.Message{Role: persistence.RoleUser, Content: fmt.Sprintf("question %d: why does the parser fail on empty input?", i), Status: persistence.StatusComplete},
				&persistence.Message{Role: persistence.RoleAssistant, Content: historyReply, Status: persistence.StatusComplete,
					TokenCount: replyTokens, TokenEncoding: counter.Name()})
			countTokens(counter, msgs[len(msgs)-2])
		}
		if err := store.AppendMessages(ctx, sid, msgs...); err != nil {
			b.Fatal(err)
		}
		if _, err := prompt(a, sid, "warm up"); err != nil { // counts the history once
			b.Fatal(err)
		}
	}
	fresh()
	var cpu time.Duration // the process's CPU time in the turns, all threads
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i++; i%10 == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		// Labelled, so that a profile can leave the setup out
		// (go tool pprof -tagfocus turn=timed).
		before := processCPU(b)
		pprof.Do(ctx, pprof.Labels("turn", "timed"), func(context.Context) {
			res, err := prompt(a, sid, "and now?")
			if err != nil || res.StopReason != acp.StopEndTurn {
				b.Fatalf("prompt: %v %v", res, err)
			}
		})
		cpu += processCPU(b) - before
	}
	// Steadier than wall time on a busy machine.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cannedEndpoint serves chat completions on loopback: it reads and drops
// the request body and streams reply in 20 chunks.
func cannedEndpoint(b *testing.B, reply string) string {
	var sse strings.Builder
	chunk := func(delta map[string]any, finish any) {
		c, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		sse.WriteString("data: " + string(c) + "\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for i := 0; i < len(reply); i += len(reply) / 20 {
		chunk(map[string]any{"content": reply[i:min(i+len(reply)/20, len(reply))]}, nil)
	}
	chunk(map[string]any{}, "stop")
	sse.WriteString("data: [DONE]\n\n")
	body := sse.String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

// processCPU is the CPU time this process has used, all threads.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
