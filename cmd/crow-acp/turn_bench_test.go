package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// BenchmarkTurn measures one prompt turn in-process (pipes, real SQLite
// file, fake model on loopback) with the benchmark reply of issue 2:
// 200 chunks of 20 characters.
func BenchmarkTurn(b *testing.B) {
	m := fakemodel.Start()
	defer m.Close()
	m.SetFallback(fakemodel.Reply{Text: strings.Repeat("abcdefghijklmnopqrs ", 200), Chunks: 200})
	dir := b.TempDir()
	vars := map[string]string{"OPENAI_BASE_URL": m.URL(), "CROW_MODEL": "bench", "CROW_DB": filepath.Join(dir, "bench.db"), "CROW_LOG_LEVEL": "error"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), nil, stdio{in: inR, out: outW, err: io.Discard}, func(k string) string { return vars[k] })
		outW.Close()
	}()
	rd := bufio.NewReaderSize(outR, 1<<20)
	call := func(id int, method string, params any) json.RawMessage {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := inW.Write(append(msg, '\n')); err != nil {
			b.Fatal(err)
		}
		want := fmt.Sprint(id)
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			var f struct{ ID, Result, Error json.RawMessage }
			_ = json.Unmarshal(line, &f)
			if string(f.ID) == want {
				if f.Error != nil {
					b.Fatalf("%s: %s", method, f.Error)
				}
				return f.Result
			}
		}
	}
	call(1, "initialize", map[string]any{"protocolVersion": 1})
	var s struct{ SessionID string }
	id := 2
	newSession := func() {
		id++
		_ = json.Unmarshal(call(id, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), &s)
	}
	newSession()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh session every 5 turns, as in crow-bench: the context
		// does not grow with b.N.
		if i > 0 && i%5 == 0 {
			b.StopTimer()
			newSession()
			b.StartTimer()
		}
		id++
		call(id, "session/prompt", map[string]any{"sessionId": s.SessionID,
			"prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	}
	b.StopTimer()
	inW.Close()
	<-done
}
