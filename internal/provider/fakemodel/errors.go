package fakemodel

import (
	"io"
	"net/http"
)

// writeRawError answers with a provider's own error body, byte for byte.
func writeRawError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
