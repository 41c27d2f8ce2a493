package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/persistence"
)

// unfinishedRetry is how often a reply whose final write failed is written
// again while the store keeps failing.
const unfinishedRetry = 200 * time.Millisecond

// unfinished holds the replies a storage fault left "streaming" in the
// store: the live process marks each failed as soon as the store answers
// again, instead of leaving that to whichever process opens the session
// next.
type unfinished struct {
	mu      sync.Mutex
	replies map[int64]*persistence.Message // by message id
	running bool
	stop    chan struct{} // closed by Close
	stopped bool
}

// finishLater queues m (an assistant reply already stored, with its ID) to
// be written with status failed once the store accepts writes again.
func (a *Agent) finishLater(m *persistence.Message) {
	if m.ID == 0 {
		return // never stored: nothing is left streaming
	}
	// The turn failed: its tool calls never ran and are not kept.
	m.Status, m.ToolCalls = persistence.StatusFailed, nil
	u := &a.unfinished
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stopped {
		return
	}
	if u.replies == nil {
		u.replies = make(map[int64]*persistence.Message)
		u.stop = make(chan struct{})
	}
	u.replies[m.ID] = m
	if !u.running {
		u.running = true
		goSafe(a.log, "retrying unfinished replies", a.retryUnfinished)
	}
}

// retryUnfinished writes the queued replies until none is left or the agent
// closes.
func (a *Agent) retryUnfinished() {
	u := &a.unfinished
	t := time.NewTicker(unfinishedRetry)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
		}
		u.mu.Lock()
		batch := make([]*persistence.Message, 0, len(u.replies))
		for _, m := range u.replies {
			batch = append(batch, m)
		}
		u.mu.Unlock()
		for _, m := range batch {
			err := a.store.UpdateMessage(context.Background(), m)
			if err != nil && !errors.Is(err, persistence.ErrNotFound) {
				continue // the store still fails; next tick
			}
			if err == nil {
				a.log.Info("reply interrupted by a storage fault marked failed", zap.String("session", m.SessionID), zap.Int64("message", m.ID))
			}
			u.mu.Lock()
			if u.replies[m.ID] == m {
				delete(u.replies, m.ID)
			}
			u.mu.Unlock()
		}
		u.mu.Lock()
		if len(u.replies) == 0 {
			u.running = false
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
	}
}

// closeUnfinished stops retrying; what is still queued is left to the next
// process that opens the session.
func (a *Agent) closeUnfinished() {
	u := &a.unfinished
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.stopped {
		u.stopped = true
		if u.stop != nil {
			close(u.stop)
		}
	}
}
