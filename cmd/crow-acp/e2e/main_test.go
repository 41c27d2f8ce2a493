package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
)

// The exit codes, as README's "Exit codes" lists them.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitIncomplete  = 4
	exitInterrupted = 130
)

// TestMain removes the builds (fixture.BuildBinary) when the tests end. It
// doubles as measurePeak's small process.
func TestMain(m *testing.M) {
	if os.Getenv(measureArgvEnv) != "" {
		os.Exit(runMeasured())
	}
	fixture.Main(m)
}

// binary is the crow-acp binary under test, built once for the package.
func binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/cmd/crow-acp")
}

// command is crow-acp with args in a clean environment (PATH, a home of
// its own unless vars names one, then vars), in a fresh directory.
func command(t testing.TB, vars map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if _, ok := vars["HOME"]; !ok {
		cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	}
	cmd.Env = append(cmd.Env, crowtest.Environ(vars)...)
	cmd.Dir = t.TempDir()
	// Not forever when a child (an MCP server) keeps stderr open.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runCmd runs cmd to its end and returns its exit code, and its stdout and
// stderr unless cmd sends them elsewhere.
func runCmd(t testing.TB, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &errb
	}
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// mustRun runs crow-acp with args and vars, failing the test unless it
// succeeds; it returns stdout.
func mustRun(t testing.TB, vars map[string]string, args ...string) string {
	t.Helper()
	code, out, errs := runCmd(t, command(t, vars, args...))
	if code != exitOK {
		t.Fatalf("crow-acp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}
