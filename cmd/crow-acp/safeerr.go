package main

import "github.com/crow-acp/crow-acp/internal/termsafe"

// safeError prints an error that may quote untrusted text (the model's
// words in a tool failure, an endpoint's error body) with its controls
// and escape sequences made visible; errors.Is and errors.As see the
// error it wraps.
type safeError struct{ err error }

func (s safeError) Error() string { return termsafe.Text(s.err.Error()) }
func (s safeError) Unwrap() error { return s.err }
