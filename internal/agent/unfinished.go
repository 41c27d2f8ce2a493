package agent

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
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
// stored is the row as last written (partialReply.asStored): written
// instead, meanwhile, when the store takes writes but refuses m (a database
// that cannot grow takes small writes and refuses a long reply's text), so
// that no reply stays "streaming" while the store answers.
func (tr *turns) finishLater(sess *session, m, stored *persistence.Message) {
	if m.ID == 0 {
		return // never stored: nothing is left streaming
	}
	// The turn failed: its tool calls never ran and are not kept.
	m.Status, m.ToolCalls = persistence.StatusFailed, nil
	select {
	case <-tr.closed:
		return // left to the next process that opens the session
	default:
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.unfinished == nil {
		sess.unfinished = make(map[int64]*unfinishedReply)
	}
	sess.unfinished[m.ID] = &unfinishedReply{final: m, stored: stored}
	if !sess.retrying {
		sess.retrying = true
		request.GoSafe(tr.log, "retrying unfinished replies", func() { tr.retryUnfinished(sess) })
	}
}

// retryUnfinished writes the session's queued replies until none is left or
// the agent closes (what is still queued is then left to the next process
// that opens the session).
func (tr *turns) retryUnfinished(sess *session) {
	t := time.NewTicker(unfinishedRetry)
	defer t.Stop()
	for {
		select {
		case <-tr.closed:
			return
		case <-t.C:
		}
		sess.mu.Lock()
		batch := make([]*unfinishedReply, 0, len(sess.unfinished))
		for _, u := range sess.unfinished {
			batch = append(batch, u)
		}
		sess.mu.Unlock()
		for _, u := range batch {
			m := u.final
			err := sess.req.UpdateMessage(context.Background(), tr.store, m)
			if err != nil && !errors.Is(err, persistence.ErrNotFound) {
				tr.markStored(sess, u)
				continue // the store still fails; next tick
			}
			if err == nil {
				tr.log.Info("reply interrupted by a storage fault marked failed", zap.String("session", m.SessionID), zap.Int64("message", m.ID))
			}
			sess.mu.Lock()
			if sess.unfinished[m.ID] == u {
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

// markStored writes u's row as last stored, marked failed, once: the store
// refused the final reply but may take this smaller write.
func (tr *turns) markStored(sess *session, u *unfinishedReply) {
	if u.marked || u.stored == nil {
		return
	}
	if sess.req.UpdateMessage(context.Background(), tr.store, u.stored) == nil {
		u.marked = true
		tr.log.Info("reply interrupted by a storage fault marked failed as last stored", zap.String("session", u.stored.SessionID), zap.Int64("message", u.stored.ID))
	}
}
