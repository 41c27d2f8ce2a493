package agent

import (
	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
)

// goSafe runs fn on its own goroutine. A panic in it (a bug) is logged
// with its stack and ends only that work: an unrecovered panic on any
// goroutine would end the process, and with it every session the editor
// has open. Every goroutine the agent starts goes through here or, when a
// request waits for its result, through acp.Safely directly (the turn).
func goSafe(log *zap.Logger, what string, fn func()) {
	go func() {
		_ = acp.Safely(log, what, func() error { fn(); return nil })
	}()
}
