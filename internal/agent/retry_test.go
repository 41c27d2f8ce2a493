package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func testPolicy(rnd float64) RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond,
		MaxRetryAfter: 10 * time.Second, Rand: func() float64 { return rnd },
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}.withDefaults()
}

func TestRetryDelayBackoffAndJitter(t *testing.T) {
	err503 := &provider.APIError{StatusCode: 503}
	low, high := testPolicy(0), testPolicy(0.999999)
	// Backoff 100ms, 200ms, then capped at 300ms; jitter keeps each wait
	// between half and all of it.
	for attempt, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 300 * time.Millisecond} {
		dl, ok := low.delay(attempt, err503)
		dh, _ := high.delay(attempt, err503)
		if !ok || dl != full/2 || dh < full*99/100 || dh > full {
			t.Errorf("attempt %d: waits %s..%s (ok %v), want %s..%s", attempt, dl, dh, ok, full/2, full)
		}
	}
	if _, ok := low.delay(4, err503); ok {
		t.Error("retried after MaxAttempts")
	}
}

func TestRetryDelayWhatIsRetryable(t *testing.T) {
	p := testPolicy(0)
	cases := []struct {
		err  error
		want bool
	}{
		{&provider.APIError{StatusCode: 429}, true},
		{&provider.APIError{StatusCode: 500}, true},
		{&provider.APIError{StatusCode: 502}, true},
		{&provider.APIError{StatusCode: 400}, false},
		{&provider.APIError{StatusCode: 401}, false},
		{&provider.APIError{StatusCode: 404}, false},
		{fmt.Errorf("x: %w", provider.ErrIdleTimeout), true},
		{fmt.Errorf("x: %w", provider.ErrIncompleteStream), true},
		{fmt.Errorf("x: %w", provider.ErrUnreachable), true},
		{fmt.Errorf("x: %w", provider.ErrMalformedChunk), false},
		{errors.New("anything else"), false},
	}
	for _, c := range cases {
		if _, got := p.delay(1, c.err); got != c.want {
			t.Errorf("%v: retry %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryDelayHonoursRetryAfter(t *testing.T) {
	p := testPolicy(0)
	now := p.Now()
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"2", 2 * time.Second, true},
		{"0", 50 * time.Millisecond, true}, // never below the backoff
		{"10", 10 * time.Second, true},
		{"11", 0, false}, // beyond MaxRetryAfter: the client hears at once
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 50 * time.Millisecond, true},
		{"soon", 50 * time.Millisecond, true}, // unreadable: plain backoff
	}
	for _, c := range cases {
		d, ok := p.delay(1, &provider.APIError{StatusCode: 429, RetryAfter: c.header})
		if ok != c.ok || (ok && d != c.want) {
			t.Errorf("Retry-After %q: %s %v, want %s %v", c.header, d, ok, c.want, c.ok)
		}
	}
}

// scriptedModel fails or answers each request in turn.
type scriptedModel struct {
	steps []func(onEvent func(provider.Event) error) (*provider.Result, error)
	calls int
}

func (m *scriptedModel) Stream(ctx context.Context, _ provider.Request, onEvent func(provider.Event) error) (*provider.Result, error) {
	step := m.steps[m.calls]
	m.calls++
	return step(onEvent)
}

func fail(err error) func(func(provider.Event) error) (*provider.Result, error) {
	return func(func(provider.Event) error) (*provider.Result, error) { return &provider.Result{}, err }
}

func answer(text string) func(func(provider.Event) error) (*provider.Result, error) {
	return func(on func(provider.Event) error) (*provider.Result, error) {
		_ = on(provider.Event{Kind: provider.EventText, Text: text})
		return &provider.Result{Text: text, FinishReason: provider.FinishStop}, nil
	}
}

func retryAgent(m provider.Client, sleeps *[]time.Duration) *Agent {
	p := testPolicy(0)
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		*sleeps = append(*sleeps, d)
		return ctx.Err()
	}
	return New(nil, nil, m, Config{Model: "m", Retry: p}, nil)
}

func TestStreamWithRetryRecovers(t *testing.T) {
	m := &scriptedModel{steps: [](func(func(provider.Event) error) (*provider.Result, error)){
		fail(&provider.APIError{StatusCode: 503}),
		fail(fmt.Errorf("cut: %w", provider.ErrIncompleteStream)),
		answer("hello"),
	}}
	var sleeps []time.Duration
	a := retryAgent(m, &sleeps)
	var seen []string
	res, st, err := a.streamWithRetry(context.Background(), m, "s", provider.Request{}, func(ev provider.Event) error {
		seen = append(seen, ev.Text)
		return nil
	})
	if err != nil || res.Text != "hello" || st.attempts != 3 || m.calls != 3 {
		t.Fatalf("res %+v, state %+v, calls %d, err %v", res, st, m.calls, err)
	}
	if fmt.Sprint(sleeps) != "[50ms 100ms]" {
		t.Errorf("waits %v, want [50ms 100ms]", sleeps)
	}
	if len(seen) != 1 {
		t.Errorf("client saw %q, want the text once", seen)
	}
}

func TestStreamWithRetryNeverRepeatsShownText(t *testing.T) {
	partial := func(on func(provider.Event) error) (*provider.Result, error) {
		_ = on(provider.Event{Kind: provider.EventText, Text: "half"})
		return &provider.Result{Text: "half"}, fmt.Errorf("cut: %w", provider.ErrIncompleteStream)
	}
	m := &scriptedModel{steps: [](func(func(provider.Event) error) (*provider.Result, error)){partial, answer("x")}}
	var sleeps []time.Duration
	res, st, err := retryAgent(m, &sleeps).streamWithRetry(context.Background(), m, "s", provider.Request{}, func(provider.Event) error { return nil })
	if err == nil || m.calls != 1 || len(sleeps) != 0 {
		t.Fatalf("retried after text reached the client: calls %d, err %v", m.calls, err)
	}
	if !st.forwarded || res.Text != "half" {
		t.Fatalf("partial reply lost: %+v %+v", st, res)
	}
	var e *acp.Error
	if !errors.As(modelError(err, st), &e) || e.Data.(map[string]any)["partial"] != true {
		t.Fatalf("the client is not told the reply is partial: %+v", e)
	}
}

func TestStreamWithRetryStopsWhenCancelled(t *testing.T) {
	m := &scriptedModel{steps: [](func(func(provider.Event) error) (*provider.Result, error)){
		fail(&provider.APIError{StatusCode: 503}), answer("late")}}
	ctx, cancel := context.WithCancel(context.Background())
	p := testPolicy(0)
	p.Sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	a := New(nil, nil, m, Config{Model: "m", Retry: p}, nil)
	_, _, err := a.streamWithRetry(ctx, m, "s", provider.Request{}, func(provider.Event) error { return nil })
	if err == nil || m.calls != 1 {
		t.Fatalf("a cancelled wait still retried: calls %d, err %v", m.calls, err)
	}
}

func TestStreamWithRetryGivesUp(t *testing.T) {
	e := &provider.APIError{StatusCode: 500}
	m := &scriptedModel{steps: [](func(func(provider.Event) error) (*provider.Result, error)){fail(e), fail(e), fail(e), fail(e), answer("never")}}
	var sleeps []time.Duration
	_, st, err := retryAgent(m, &sleeps).streamWithRetry(context.Background(), m, "s", provider.Request{}, func(provider.Event) error { return nil })
	if err == nil || m.calls != 4 || st.attempts != 4 || len(sleeps) != 3 {
		t.Fatalf("calls %d, attempts %d, waits %v, err %v: want 4 attempts and 3 waits", m.calls, st.attempts, sleeps, err)
	}
}

// TestSummaryAndTitleRequestsRetry: the summary request of a compaction
// and the title request are retried like a turn's requests, honouring
// Retry-After; the model's summary and title are used, not the fallbacks.
func TestSummaryAndTitleRequestsRetry(t *testing.T) {
	var sleeps []time.Duration
	p := testPolicy(0)
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		sleeps = append(sleeps, d)
		return ctx.Err()
	}
	a, rec, m := newTestAgent(t, Config{Model: "m", ModelTitles: true, NoTools: true, Retry: p})
	ctx := context.Background()
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	busy := fakemodel.Reply{Status: 429, Headers: map[string]string{"Retry-After": "2"}}
	m.Enqueue(fakemodel.Reply{Text: "Done."}, busy, fakemodel.Reply{Text: "Rename the parser"})
	if _, err := prompt(a, s.SessionID, "please rename the parser package"); err != nil {
		t.Fatal(err)
	}
	if got := rec.titles(); len(got) != 2 || got[1] != "Rename the parser" {
		t.Fatalf("titles %q: the title request was not retried", got)
	}
	for i := 0; i < 8; i++ {
		m.Enqueue(fakemodel.Reply{Text: "ok"})
		if _, err := prompt(a, s.SessionID, fmt.Sprintf("step %d: %s", i, prose(i, 150))); err != nil {
			t.Fatal(err)
		}
	}
	m.Enqueue(fakemodel.Reply{Status: 503}, fakemodel.Reply{Text: "Task: rename the parser. Next steps: none."})
	if _, err := prompt(a, s.SessionID, "/compact"); err != nil {
		t.Fatal(err)
	}
	list, err := a.store.Compactions(ctx, s.SessionID)
	if err != nil || len(list) != 1 || list[0].Policy != compaction.PolicySummarize {
		t.Fatalf("compactions %+v (%v): want one summary written by the model after a retry", list, err)
	}
	if fmt.Sprint(sleeps) != "[2s 50ms]" {
		t.Errorf("waits %v, want the title's Retry-After 2s, then the summary's 50ms backoff", sleeps)
	}
}
