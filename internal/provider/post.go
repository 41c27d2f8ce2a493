package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"

	"github.com/crow-acp/crow-acp/internal/origin"
)

// poster sends the chat request as openai-go's generic Client.Post did:
// the path resolved against the base URL (a trailing slash added to it),
// JSON content headers, the configured headers, the middlewares outermost
// first, no retries, and no request to any origin but the base URL's, not
// even through a redirect, since every request carries the endpoint's
// credentials. It is here instead of the SDK's root package because that
// package brings the SDK's whole API surface (realtime, webhooks,
// conversations, ...) into the binary and initialises it at every start:
// 19 MB of executable, about 4 MB of it resident, for one POST. The
// Responses API still goes through openai-go (responses.go).
type poster struct {
	base   *url.URL
	err    error // the base URL's, reported at every post
	client *http.Client
	header http.Header
}

func newPoster(base string, hc *http.Client, header http.Header) poster {
	p := poster{header: header}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		p.err = fmt.Errorf("streaming: base URL: %w", err)
		return p
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		p.err = fmt.Errorf("streaming: base URL %q: want http:// or https:// and a host", u.Redacted())
		return p
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	p.base = u
	p.client = origin.Client(hc, u) // see package origin
	return p
}

// post sends a POST to path (relative to the base URL) with no body of its
// own: a middleware puts the body in place (payload.send).
func (p poster) post(ctx context.Context, path string, middlewares ...option.Middleware) (*http.Response, error) {
	if p.err != nil {
		return nil, p.err
	}
	u, err := p.base.Parse(strings.TrimLeft(path, "/"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "crow-acp") // not Go's generic one, which some gateways refuse
	for k, v := range p.header {
		req.Header[k] = append([]string(nil), v...)
	}
	next := p.client.Do
	for i := len(middlewares) - 1; i >= 0; i-- {
		mw, inner := middlewares[i], next
		next = func(r *http.Request) (*http.Response, error) { return mw(r, inner) }
	}
	return next(req)
}
