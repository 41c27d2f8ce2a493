package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider"
)

// RetryPolicy decides whether and when a failed model request is sent again.
// Only failures that may pass are retried (429, 5xx, an idle or cut stream,
// an unreachable endpoint), and only while nothing of the reply has reached
// the client: a retry never shows the user the same text twice.
type RetryPolicy struct {
	// MaxAttempts counts every request, the first included. 1 never
	// retries; 0 means DefaultRetryPolicy's.
	MaxAttempts int
	// BaseDelay is the first backoff; it doubles per retry up to MaxDelay.
	// Each wait is jittered between half and all of it.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter bounds the endpoint's Retry-After: a longer one is not
	// waited for; the error goes to the client at once.
	MaxRetryAfter time.Duration
	// Sleep waits for d or until ctx ends (nil: a timer). Tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter (nil: math/rand/v2).
	Rand func() float64
	// Now is the clock for HTTP-date Retry-After values (nil: time.Now).
	Now func() time.Time
}

// DefaultRetryPolicy: four attempts over roughly 0.5+1+2 s of backoff.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   4,
	BaseDelay:     500 * time.Millisecond,
	MaxDelay:      8 * time.Second,
	MaxRetryAfter: 30 * time.Second,
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether err may pass on a later attempt.
func retryable(err error) bool {
	var api *provider.APIError
	if errors.As(err, &api) {
		return api.Retryable()
	}
	return errors.Is(err, provider.ErrIdleTimeout) ||
		errors.Is(err, provider.ErrIncompleteStream) ||
		errors.Is(err, provider.ErrUnreachable)
}

// delay returns how long to wait before attempt+1 after err, or false when
// the request must not be retried.
func (p RetryPolicy) delay(attempt int, err error) (time.Duration, bool) {
	if attempt >= p.MaxAttempts || !retryable(err) {
		return 0, false
	}
	backoff := p.BaseDelay << (attempt - 1)
	if backoff > p.MaxDelay || backoff <= 0 {
		backoff = p.MaxDelay
	}
	backoff = backoff/2 + time.Duration(p.Rand()*float64(backoff/2))
	var api *provider.APIError
	if errors.As(err, &api) && api.RetryAfter != "" {
		ra, ok := parseRetryAfter(api.RetryAfter, p.Now())
		if ok && ra > p.MaxRetryAfter {
			return 0, false
		}
		if ok && ra > backoff {
			return ra, true
		}
	}
	return backoff, true
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n < 1e6 {
		return time.Duration(n * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// retryState is what a failed model request left behind, for the error the
// client sees.
type retryState struct {
	attempts  int
	forwarded bool // part of the reply reached the client
}
