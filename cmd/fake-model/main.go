// Command fake-model serves scripted chat completions on the loopback
// interface, OpenAI-style, for the demo and end-to-end benchmarks.
//
//	fake-model -script FILE [-addr 127.0.0.1:0] [-fallback-text T] [-fallback-chunks N] [-stdin-eof]
//
// The script holds one JSON reply per line (see streaming/fakemodel.Reply);
// replies are served in order, then the fallback. The base URL (ending in /v1)
// is printed as the first line on stdout. It serves until SIGINT or SIGTERM,
// or until stdin reaches EOF when -stdin-eof is given.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fake-model:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
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

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	eof := make(chan struct{})
	if *stdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(eof)
		}()
	}
	select {
	case <-stop:
	case <-eof:
	}
	return nil
}
