package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// verdict says whether a figure met its target.
func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// rawStream fetches a scripted stream's bytes without reading them.
type rawStream struct {
	url    string
	client *http.Client
}

// directStreamTime is the model's own time: how long it takes to fetch the
// whole scripted stream over HTTP, bytes only. Decoding the chunks is
// crow-acp's work, so it counts as overhead. It is measured right before
// each turn so that both see the same machine load.
func directStreamTime(c rawStream) (time.Duration, error) {
	start := time.Now()
	resp, err := c.client.Post(c.url, "application/json",
		strings.NewReader(`{"model":"bench","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || n == 0) {
		err = fmt.Errorf("status %s, %d bytes", resp.Status, n)
	}
	return time.Since(start), err
}

// quartile is the first quartile of ds.
func quartile(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/4]
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
