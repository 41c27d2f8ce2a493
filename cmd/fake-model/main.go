// Command fake-model serves scripted chat completions on the loopback
// interface, OpenAI-style, for the demo and end-to-end benchmarks.
//
//	fake-model -script FILE [-addr 127.0.0.1:0] [-fallback-text T] [-fallback-chunks N] [-stdin-eof]
//	fake-model record -upstream URL -out FILE [-addr 127.0.0.1:0] [-stdin-eof]
//
// The script holds one JSON reply per line (see streaming/fakemodel.Reply);
// replies are served in order, then the fallback. The base URL (ending in /v1)
// is printed as the first line on stdout. It serves until SIGINT or SIGTERM,
// or until stdin reaches EOF when -stdin-eof is given.
//
// record proxies to a real endpoint instead and writes each chat
// completion's answer to FILE as a fixture's -- model -- section, so a
// session captured once replays in tests; requests, headers and keys are
// never written, and key-shaped text in the answers is redacted.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fake-model:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "record" {
		return record(args[1:], stdin, stdout)
	}
	fs := flag.NewFlagSet("fake-model", flag.ContinueOnError)
	script := fs.String("script", "", "file of JSON-line replies (empty: fallback only)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	fallbackText := fs.String("fallback-text", "ok", "text of the reply served when the script is used up")
	fallbackChunks := fs.Int("fallback-chunks", 0, "deltas the fallback text is split into (0: one per word)")
	stdinEOF := fs.Bool("stdin-eof", false, "exit when stdin reaches EOF")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := fakemodel.CheckLoopback(*addr); err != nil {
		return err
	}
	var replies []fakemodel.Reply
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			return err
		}
		replies, err = fakemodel.ParseScript(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	srv, err := fakemodel.Listen(*addr)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.SetFallback(fakemodel.Reply{Text: *fallbackText, Chunks: *fallbackChunks})
	srv.Enqueue(replies...)
	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		return err
	}
	wait(stdin, *stdinEOF)
	return nil
}

// record serves a Recorder in front of -upstream until stopped, writing the
// replies to -out after each one.
func record(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("fake-model record", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "base URL of the real endpoint, e.g. https://api.example.com/v1")
	out := fs.String("out", "", "fixture file to write the replies to (replaced)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	stdinEOF := fs.Bool("stdin-eof", false, "exit when stdin reaches EOF")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" || *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("record: usage: fake-model record -upstream URL -out FILE")
	}
	if err := fakemodel.CheckLoopback(*addr); err != nil {
		return err
	}
	rec, err := fakemodel.NewRecorder(*upstream)
	if err != nil {
		return err
	}
	host := *upstream
	if u, err := url.Parse(*upstream); err == nil {
		host = u.Host // never the path or query, which may hold a key
	}
	header := fmt.Sprintf("Recorded by fake-model record from %s on %s: the model's replies only (no requests, headers or keys).\nReplace this text with what the scenario tests, and add a -- script -- section.",
		host, time.Now().UTC().Format("2006-01-02"))
	rec.OnReply = func(all []fakemodel.Reply) error {
		var b bytes.Buffer
		if err := fakemodel.WriteFixture(&b, header, all); err != nil {
			return err
		}
		return os.WriteFile(*out, b.Bytes(), 0o600)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if _, err := fmt.Fprintf(stdout, "http://%s/v1\n", ln.Addr()); err != nil {
		return err
	}
	wait(stdin, *stdinEOF)
	if err := rec.Err(); err != nil {
		return fmt.Errorf("record: write %s: %w", *out, err)
	}
	fmt.Fprintf(os.Stderr, "fake-model: recorded %d replies to %s\n", len(rec.Replies()), *out)
	return nil
}

// wait returns on SIGINT or SIGTERM, or at stdin's EOF when stdinEOF.
func wait(stdin io.Reader, stdinEOF bool) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	eof := make(chan struct{})
	if stdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(eof)
		}()
	}
	select {
	case <-stop:
	case <-eof:
	}
}
