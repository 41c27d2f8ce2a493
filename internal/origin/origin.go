// Package origin keeps requests that carry credentials (a model endpoint's
// key and headers, an MCP server's headers) to the one origin, scheme, host
// and port, they were configured for. net/http follows a redirect to any
// host with every header but Authorization and cookies, so a configured
// api-key header would reach whatever host a redirect names.
package origin

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrOther refuses a request to another origin than the configured one.
var ErrOther = errors.New("the request would leave the configured origin (a redirect to another host?); refused, as it carries credentials")

// Transport sends only requests to origin's scheme, host and port through
// next (http.DefaultTransport when nil), and refuses every other.
func Transport(origin *url.URL, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return guard{origin: origin, next: next}
}

// Client is hc sending only to origin (Transport).
func Client(hc *http.Client, origin *url.URL) *http.Client {
	c := *hc
	c.Transport = Transport(origin, c.Transport)
	return &c
}

type guard struct {
	origin *url.URL
	next   http.RoundTripper
}

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if !Same(req.URL, g.origin) {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, ErrOther
	}
	return g.next.RoundTrip(req)
}

// Same reports whether a and b have one origin: scheme, host and port, a
// scheme's default port spelled out or not.
func Same(a, b *url.URL) bool {
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
