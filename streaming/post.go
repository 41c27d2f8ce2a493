package streaming

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// poster sends the chat request as openai-go's generic Client.Post did:
// the path resolved against the base URL (a trailing slash added to it),
// JSON content headers, the configured headers, the middlewares outermost
// first, no retries, and no request to any origin but the base URL's, not
// even through a redirect, since every request carries the endpoint's
// credentials. It is here instead of the SDK's root package because that
// package brings the SDK's whole API surface (realtime, webhooks,
// conversations, ...) into the binary and initialises it at every start:
// 16 MB of executable, about 3 MB of it resident, for one POST. The
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
	p.client = originClient(hc, u)
	return p
}

// originClient is hc sending only to origin's scheme, host and port: not
// even a redirect may take a request carrying the endpoint's credentials
// elsewhere (net/http keeps a custom header such as an api-key on a
// redirect to another host; it drops only Authorization and cookies).
func originClient(hc *http.Client, origin *url.URL) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = originOnly{origin: origin, next: next}
	return &c
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

// errOtherOrigin refuses a request (a redirect, or a middleware's rewrite)
// to an origin other than the base URL's.
var errOtherOrigin = errors.New("streaming: the request would leave the endpoint's origin (a redirect to another host?); refused, as it carries the endpoint's credentials")

// originOnly is a transport that sends only requests to origin: scheme,
// host and port (the default one spelled out or not).
type originOnly struct {
	origin *url.URL
	next   http.RoundTripper
}

func (t originOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(req.URL, t.origin) {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, errOtherOrigin
	}
	return t.next.RoundTrip(req)
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

// hostPort is u's host and port, the scheme's default port when it has none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
