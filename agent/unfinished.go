package agent

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/persistence"
)

// unfinishedRetry is how often a reply whose final write failed is written
// again while the store keeps failing.
const unfinishedRetry = 200 * time.Millisecond

// A storage fault can leave a reply "streaming" in the store. Its session
// keeps it (session.unfinished) and marks it failed as soon as the store
// answers again, instead of leaving that to whichever process opens the
// session next.

// finishLater queues m (an assistant reply of sess already stored, with its
// ID) to be written with status failed once the store accepts writes again.
func (a *Agent) finishLater(sess *session, m *persistence.Message) {
	if m.ID == 0 {
		return // never stored: nothing is left streaming
	}
	// The turn failed: its tool calls never ran and are not kept.
	m.Status, m.ToolCalls = persistence.StatusFailed, nil
	select {
	case <-a.closed:
		return // left to the next process that opens the session
	default:
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.unfinished == nil {
		sess.unfinished = make(map[int64]*persistence.Message)
	}
	sess.unfinished[m.ID] = m
	if !sess.retrying {
		sess.retrying = true
		goSafe(a.log, "retrying unfinished replies", func() { a.retryUnfinished(sess) })
	}
}

// retryUnfinished writes the session's queued replies until none is left or
// the agent closes (what is still queued is then left to the next process
// that opens the session).
func (a *Agent) retryUnfinished(sess *session) {
	t := time.NewTicker(unfinishedRetry)
	defer t.Stop()
	for {
		select {
		case <-a.closed:
			return
		case <-t.C:
		}
		sess.mu.Lock()
		batch := make([]*persistence.Message, 0, len(sess.unfinished))
		for _, m := range sess.unfinished {
			batch = append(batch, m)
		}
		sess.mu.Unlock()
		for _, m := range batch {
			err := sess.updateMessage(context.Background(), a.store, m)
			if err != nil && !errors.Is(err, persistence.ErrNotFound) {
				continue // the store still fails; next tick
			}
			if err == nil {
				a.log.Info("reply interrupted by a storage fault marked failed", zap.String("session", m.SessionID), zap.Int64("message", m.ID))
			}
			sess.mu.Lock()
			if sess.unfinished[m.ID] == m {
				delete(sess.unfinished, m.ID)
			}
			sess.mu.Unlock()
		}
		sess.mu.Lock()
		if len(sess.unfinished) == 0 {
			sess.retrying = false
			sess.mu.Unlock()
			return
		}
		sess.mu.Unlock()
	}
}
