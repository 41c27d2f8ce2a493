package acp

import (
	"runtime/debug"

	"go.uber.org/zap"
)

// Safely runs fn: a request handler, a notification, an AfterResponse hook
// (the connection wraps each), or an agent's own goroutine (a prompt turn,
// background work). A panic in it is a bug: it is logged with its stack
// (the log is stderr or a file, never stdout) and returned as -32603, and
// the process goes on serving. One broken request or task must not take
// the editor's agent process down with it. what names the work for the
// person reading the error ("session/load", "the prompt turn").
func Safely(log *zap.Logger, what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if log == nil {
				log = zap.NewNop()
			}
			log.Error("internal error (a bug in crow-acp): "+what+" panicked; the connection goes on serving",
				zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			err = InternalError("crow-acp hit an internal error in %s (a bug: please report it with the agent's log, which has the details). That failed; crow-acp keeps running.", what)
		}
	}()
	return fn()
}
