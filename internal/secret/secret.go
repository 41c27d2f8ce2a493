// Package secret keeps configured secrets out of what crow-acp stores, logs
// and prints: one Redactor for every secret the configuration holds (API
// keys, header values, URL passwords), and the masking of MCP server
// credentials in recorded frames.
package secret

import (
	"io"
	"net/url"
	"sort"
	"strings"
)

// Mask replaces a secret value where the structure around it is kept.
const Mask = "[masked]"

// minSecret is the shortest value redacted: replacing every "a" or "1" of a
// text would destroy it without protecting anything.
const minSecret = 6

// Redactor removes known secret values from text.
type Redactor struct {
	secrets []string // longest first, so a secret containing another goes whole
}

// NewRedactor redacts the given secrets (empty and very short ones are
// ignored). Each is also matched in its URL-encoded forms, as it appears in
// quoted URLs.
func NewRedactor(secrets ...string) *Redactor {
	seen := map[string]bool{}
	r := &Redactor{}
	add := func(s string) {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
	for _, s := range secrets {
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(url.UserPassword("", s).String()[1:]) // as in a URL's userinfo
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// Redact returns s with every secret replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// URL returns u with the password of its userinfo masked (and the userinfo
// kept, so the user it names is still shown).
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if _, ok := p.User.Password(); !ok {
		return u
	}
	return p.Redacted()
}

// URLPassword is the password in u's userinfo, or "".
func URLPassword(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return ""
	}
	pw, _ := p.User.Password()
	return pw
}

// writer redacts what passes through it, line by line as written (a log
// encoder writes one entry per call).
type writer struct {
	w io.Writer
	r *Redactor
}

// NewWriter returns w redacting r's secrets from every write.
func NewWriter(w io.Writer, r *Redactor) io.Writer {
	if r.Empty() {
		return w
	}
	return writer{w: w, r: r}
}

func (w writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
