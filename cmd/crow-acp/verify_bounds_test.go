package main

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate/deflatetest"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/persistence/backend"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestVerifyCraftedRunBounded (issue 37, item 9): a database of a few MB
// whose one streamed run inflates past a read's budget (1 GiB) makes the
// real binary's sessions verify fail naming the event and the budget,
// with a peak RSS far below what the run claims: the run is measured
// before anything of its size is allocated (a 600 MiB run made verify
// pass 2 GiB).
func TestVerifyCraftedRunBounded(t *testing.T) {
	bin := testBinary(t)
	m := fakemodel.Start()
	defer m.Close()
	m.Enqueue(fakemodel.Reply{Text: "a streamed answer"})
	env := fixture.NewEnv(t)
	var stderr bytes.Buffer
	cmd := execCommand(t, bin, m, env, "hello")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec: %v\n%s", err, stderr.String())
	}
	// The answer's text is left to its frames, which verify reads.
	id, db := sessionRE.FindString(stderr.String()), env.DBPath
	s, err := backend.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	bomb := append([]byte("\x00deflate\n"), deflatetest.Zeros(persistence.MaxDecoded+64<<20)...)
	err = s.AppendEvents(t.Context(), &persistence.Event{Stream: id, Kind: persistence.EventNotification,
		Direction: persistence.DirOut, Method: "session/update", Body: bomb})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(db); err != nil || st.Size() > 16<<20 {
		t.Fatalf("the crafted database: %v, %d bytes; want a small file", err, st.Size())
	}

	cmd = exec.Command(bin, "sessions", "verify", id, "--db", db)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stderr.Reset()
	cmd.Stderr = &stderr
	peak, err := measurePeak(t, cmd)
	if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(stderr.String(), "budget of 1073741824 bytes") || !strings.Contains(stderr.String(), "event ") {
		t.Fatalf("sessions verify: %v\n%s\nwant an error naming the event and the budget", err, stderr.String())
	}
	if runtime.GOOS != "linux" {
		return // Maxrss is in KiB on Linux only
	}
	t.Logf("sessions verify peaked at %d MiB", peak>>10)
	if peak > 128<<10 {
		t.Errorf("sessions verify peaked at %d MiB of memory for a run it refused", peak>>10)
	}
}
