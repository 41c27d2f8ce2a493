package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/persistence"
)

// openingStore is the session database while it opens in the background:
// serve answers initialize without waiting for the open (a SQLite file's
// migrations, a PostgreSQL connection), and each call waits for it. An open
// that failed is reported by every call that needs the store, and the next
// call tries again (a locked or missing database can be fixed while the
// editor keeps the agent running).
//
// It defines every method of persistence.Recorder and WindowCache itself,
// so a method added to the store does not compile until it is added here.
type openingStore struct {
	open func(context.Context) (persistence.Recorder, error)
	log  *zap.Logger

	mu      sync.Mutex
	cur     *openAttempt
	gone    chan struct{} // closed by abandon: calls stop waiting
	stopped bool
	final   bool // a failed open is not tried again (failedView)
}

type openAttempt struct {
	done chan struct{} // closed when the open ended
	s    persistence.Recorder
	err  error
}

var (
	_ persistence.Recorder    = (*openingStore)(nil)
	_ persistence.WindowCache = (*openingStore)(nil)
)

// errStoreAbandoned is what a call still waiting for the open gets once
// the connection ended without it.
var errStoreAbandoned = errors.New("the session database did not open before the connection closed")

// openInBackground starts opening the store with open.
func openInBackground(open func(context.Context) (persistence.Recorder, error), log *zap.Logger) *openingStore {
	o := &openingStore{open: open, log: log, gone: make(chan struct{})}
	o.mu.Lock()
	o.startLocked()
	o.mu.Unlock()
	return o
}

func (o *openingStore) startLocked() {
	a := &openAttempt{done: make(chan struct{})}
	o.cur = a
	go func() {
		s, err := o.open(context.Background())
		o.mu.Lock()
		defer o.mu.Unlock()
		if err == nil && o.stopped {
			_ = s.Close() // opened after the connection ended: nobody uses it
			s, err = nil, errStoreAbandoned
		}
		if err != nil {
			o.log.Error("cannot open the session database", zap.Error(err))
		}
		a.s, a.err = s, err
		close(a.done)
	}()
}

// store waits for the open and returns the store, or the reason it could
// not be opened; after a failed open it tries again.
func (o *openingStore) store(ctx context.Context) (persistence.Recorder, error) {
	o.mu.Lock()
	a := o.cur
	if o.stopped {
		o.mu.Unlock()
		return nil, errStoreAbandoned
	}
	select {
	case <-a.done:
		if a.err != nil && !o.final {
			o.startLocked()
			a = o.cur
		}
	default:
	}
	o.mu.Unlock()
	select {
	case <-a.done:
		return a.s, a.err
	case <-o.gone:
		return nil, errStoreAbandoned
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// settle waits up to grace for an open still running; after that the
// open is abandoned: calls waiting for it fail with errStoreAbandoned, and
// a store it opens later is closed at once. serve calls it when the client
// has gone, so that the connection's record and frames are written when
// the database opens in time, and a database that never answers (a hung
// network file system) does not keep the process from exiting.
func (o *openingStore) settle(grace time.Duration) {
	o.mu.Lock()
	a := o.cur
	o.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
		o.mu.Lock()
		if !o.stopped {
			o.stopped = true
			close(o.gone)
		}
		o.mu.Unlock()
		o.log.Error("the session database did not open in time; exiting without it", zap.Duration("waited", grace))
	}
}

// failed is why the store is not open after settle: the last open's
// error, or errStoreAbandoned; nil if it is open.
func (o *openingStore) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-o.cur.done:
		return o.cur.err
	default:
		return errStoreAbandoned
	}
}

// Close closes the store if it opened; it does not wait for an open still
// running (settle first).
func (o *openingStore) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.stopped {
		o.stopped = true
		close(o.gone)
	}
	select {
	case <-o.cur.done:
		if o.cur.s != nil {
			return o.cur.s.Close()
		}
	default:
	}
	return nil
}

// WithOrigin is the opened store's view; if the store cannot be opened,
// the view's every call reports why (and none opens the store without the
// origin).
func (o *openingStore) WithOrigin(origin persistence.Origin) persistence.Store {
	s, err := o.store(context.Background())
	if err != nil {
		return failedView(err)
	}
	return s.WithOrigin(origin)
}

// WithFence is WithOrigin's twin for a lease holder's writes.
func (o *openingStore) WithFence(f persistence.Fence) persistence.Store {
	s, err := o.store(context.Background())
	if err != nil {
		return failedView(err)
	}
	return s.WithFence(f)
}

// failedView is a store whose every call returns err.
func failedView(err error) *openingStore {
	a := &openAttempt{done: make(chan struct{}), err: err}
	close(a.done)
	return &openingStore{cur: a, gone: make(chan struct{}), final: true}
}

// The methods of persistence.Store, each once the store is open.

func (o *openingStore) CreateConnection(ctx context.Context, c *persistence.Connection) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.CreateConnection(ctx, c)
}

func (o *openingStore) AppendEvents(ctx context.Context, evs ...*persistence.Event) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.AppendEvents(ctx, evs...)
}

func (o *openingStore) Events(ctx context.Context, stream string, f persistence.EventFilter) ([]persistence.Event, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Events(ctx, stream, f)
}

func (o *openingStore) LastTurn(ctx context.Context, stream string) (int64, error) {
	s, err := o.store(ctx)
	if err != nil {
		return 0, err
	}
	return s.LastTurn(ctx, stream)
}

func (o *openingStore) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	s, err := o.store(ctx)
	if err != nil {
		return 0, err
	}
	return s.PruneEvents(ctx, before)
}

func (o *openingStore) UpdateMessage(ctx context.Context, m *persistence.Message) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.UpdateMessage(ctx, m)
}

func (o *openingStore) InterruptStreaming(ctx context.Context, sessionID string) (int, error) {
	s, err := o.store(ctx)
	if err != nil {
		return 0, err
	}
	return s.InterruptStreaming(ctx, sessionID)
}

func (o *openingStore) AcquireLease(ctx context.Context, l *persistence.Lease, ttl time.Duration, replace string) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.AcquireLease(ctx, l, ttl, replace)
}

func (o *openingStore) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]string, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.RenewLeases(ctx, owner, ttl)
}

func (o *openingStore) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.ReleaseLease(ctx, sessionID, owner)
}

func (o *openingStore) GetLease(ctx context.Context, sessionID string) (*persistence.Lease, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.GetLease(ctx, sessionID)
}

func (o *openingStore) SetPermissionRule(ctx context.Context, r *persistence.PermissionRule) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.SetPermissionRule(ctx, r)
}

func (o *openingStore) PermissionRules(ctx context.Context, cwd string) ([]persistence.PermissionRule, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.PermissionRules(ctx, cwd)
}

func (o *openingStore) CreateSession(ctx context.Context, sess *persistence.Session) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.CreateSession(ctx, sess)
}

func (o *openingStore) GetSession(ctx context.Context, id string) (*persistence.Session, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.GetSession(ctx, id)
}

func (o *openingStore) UpdateSession(ctx context.Context, sess *persistence.Session) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.UpdateSession(ctx, sess)
}

func (o *openingStore) ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, "", err
	}
	return s.ListSessions(ctx, opts)
}

func (o *openingStore) DeleteSession(ctx context.Context, id string) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.DeleteSession(ctx, id)
}

func (o *openingStore) AppendMessages(ctx context.Context, sessionID string, msgs ...*persistence.Message) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.AppendMessages(ctx, sessionID, msgs...)
}

func (o *openingStore) Messages(ctx context.Context, sessionID string, f persistence.MessageFilter) ([]persistence.Message, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Messages(ctx, sessionID, f)
}

func (o *openingStore) Compactions(ctx context.Context, sessionID string) ([]persistence.Compaction, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Compactions(ctx, sessionID)
}

func (o *openingStore) ImportSession(ctx context.Context, d *persistence.SessionDump) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.ImportSession(ctx, d)
}

func (o *openingStore) Compact(ctx context.Context, c *persistence.Compaction, added []*persistence.Message) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.Compact(ctx, c, added)
}

func (o *openingStore) Compaction(ctx context.Context, sessionID string, id int64) (*persistence.Compaction, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Compaction(ctx, sessionID, id)
}

func (o *openingStore) ExpandCompaction(ctx context.Context, sessionID string, id int64) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.ExpandCompaction(ctx, sessionID, id)
}

func (o *openingStore) CollapseCompaction(ctx context.Context, sessionID string, id int64) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.CollapseCompaction(ctx, sessionID, id)
}

func (o *openingStore) DeleteCompaction(ctx context.Context, sessionID string, id int64) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.DeleteCompaction(ctx, sessionID, id)
}

func (o *openingStore) SetTokenCounts(ctx context.Context, sessionID, encoding string, counts map[int64]int) error {
	s, err := o.store(ctx)
	if err != nil {
		return err
	}
	return s.SetTokenCounts(ctx, sessionID, encoding, counts)
}

// The window cache, when the opened store keeps one.

var errNoWindowCache = errors.New("the session database keeps no context windows")

func (o *openingStore) windows(ctx context.Context) (persistence.WindowCache, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	wc, ok := s.(persistence.WindowCache)
	if !ok {
		return nil, errNoWindowCache
	}
	return wc, nil
}

func (o *openingStore) ModelWindow(ctx context.Context, endpoint, model string) (persistence.ModelWindow, error) {
	wc, err := o.windows(ctx)
	if err != nil {
		return persistence.ModelWindow{}, err
	}
	return wc.ModelWindow(ctx, endpoint, model)
}

func (o *openingStore) SetModelWindow(ctx context.Context, w *persistence.ModelWindow) error {
	wc, err := o.windows(ctx)
	if err != nil {
		return err
	}
	return wc.SetModelWindow(ctx, w)
}

func (o *openingStore) DeleteModelWindows(ctx context.Context, endpoint, model string) (int, error) {
	wc, err := o.windows(ctx)
	if err != nil {
		return 0, err
	}
	return wc.DeleteModelWindows(ctx, endpoint, model)
}

func (o *openingStore) ForkSession(ctx context.Context, sourceID string, fork *persistence.Session) (persistence.ForkStats, error) {
	s, err := o.store(ctx)
	if err != nil {
		return persistence.ForkStats{}, err
	}
	return s.ForkSession(ctx, sourceID, fork)
}
