package agent

import (
	"context"
	"encoding/json"
	"runtime"
)

// debugStats is the result of _crow/debug/stats.
type debugStats struct {
	Goroutines     int    `json:"goroutines"`
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
	HeapObjects    uint64 `json:"heapObjects"`
	RunningTurns   int    `json:"runningTurns"`
}

// extDebugStats reports the process's own figures, so a client (the soak
// test, someone chasing a leak) can compare them over time. It reads no
// session data.
func extDebugStats(_ context.Context, a *Agent, _ json.RawMessage) (any, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	a.sessions.mu.Lock()
	running := a.sessions.runningLocked()
	a.sessions.mu.Unlock()
	return debugStats{
		Goroutines:     runtime.NumGoroutine(),
		HeapAllocBytes: ms.HeapAlloc,
		HeapObjects:    ms.HeapObjects,
		RunningTurns:   running,
	}, nil
}
