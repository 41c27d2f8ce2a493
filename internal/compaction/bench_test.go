package compaction

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// benchView builds a seq-ordered view of about total tokens: turns of a
// request, a tool call and a large tool output, and an answer.
func benchView(c Counter, total int) []persistence.Message {
	output := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { w.Write(body) }\n", 100)
	var msgs []persistence.Message
	var id int64
	add := func(m persistence.Message) int {
		id++
		m.ID, m.Seq, m.IsActive, m.Status = id, id, true, persistence.StatusComplete
		m.TokenCount = MessageTokens(c, &m)
		msgs = append(msgs, m)
		return m.TokenCount
	}
	sum := 0
	for turn := 0; sum < total; turn++ {
		call := fmt.Sprintf("call_%d", turn)
		sum += add(persistence.Message{Role: persistence.RoleUser, Content: "look at the handler and fix the bug"})
		sum += add(persistence.Message{Role: persistence.RoleAssistant, ToolCalls: []persistence.ToolCall{{ID: call, Name: "read_file", Arguments: `{"path":"h.go"}`}}})
		sum += add(persistence.Message{Role: persistence.RoleTool, ToolCallID: call, Content: output})
		sum += add(persistence.Message{Role: persistence.RoleAssistant, Content: "The handler ignores the error from Write; fixed."})
	}
	return msgs
}

// BenchmarkPrune200k is the pruning pass on a 200k-token view (target: at
// most 50 ms).
func BenchmarkPrune200k(b *testing.B) {
	c, err := NewCounter("", "o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	view := benchView(c, 200000)
	s := Defaults()
	s.Window = 400000
	b.ResetTimer()
	for b.Loop() {
		if p := Prune(c, 1000, view, s); p == nil {
			b.Fatal("nothing pruned")
		}
	}
	b.ReportMetric(float64(ViewTokens(c, view)), "tokens")
}

// BenchmarkTokenizer is token counting throughput on Go source.
func BenchmarkTokenizer(b *testing.B) {
	var src strings.Builder
	files, _ := filepath.Glob("../agent/*.go")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		src.Write(data)
	}
	text := src.String()
	for _, enc := range []string{"o200k_base", "cl100k_base", EncodingEstimate} {
		c, err := NewCounter("", enc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(enc, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if c.Count(text) == 0 {
					b.Fatal("no tokens")
				}
			}
		})
	}
}

// BenchmarkEstimatorHostile counts 1 MiB of the bytes that once hung the
// estimator (ANSI colour output, every control byte, DEL, invalid UTF-8):
// the throughput stays that of ordinary text (BenchmarkTokenizer/estimate).
func BenchmarkEstimatorHostile(b *testing.B) {
	var controls strings.Builder
	for c := byte(0); c < 0x20; c++ {
		controls.WriteByte(c)
	}
	controls.WriteByte(0x7f)
	for name, unit := range map[string]string{
		"ansi":     "ok \x1b[32mPASS\x1b[0m pkg/x 0.01s\n",
		"controls": controls.String(),
		"invalid":  "\xff\xfe\xc0\xaf\xed\xa0\x80",
	} {
		text := strings.Repeat(unit, (1<<20)/len(unit))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if (Estimator{}).Count(text) == 0 {
					b.Fatal("no tokens")
				}
			}
		})
	}
}
