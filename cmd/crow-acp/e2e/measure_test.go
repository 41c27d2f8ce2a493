package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A child's ru_maxrss on Linux counts the memory of the process that
// started it: exec records the high-water mark of the address space it
// replaces, which for Go's vfork-style start is the parent's. A test
// process that grew to 200 MB makes every child it starts "peak" at 200 MB.
// measurePeak runs cmd from a fresh, small copy of the test binary instead
// (runMeasured), which reports its child's peak.
func measurePeak(t *testing.T, cmd *exec.Cmd) (kib int64, err error) {
	t.Helper()
	argv, _ := json.Marshal(cmd.Args)
	out := filepath.Join(t.TempDir(), "maxrss")
	wrapped := exec.Command(os.Args[0])
	wrapped.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], measureArgvEnv+"="+string(argv), measureOutEnv+"="+out)
	wrapped.Stdin, wrapped.Stdout, wrapped.Stderr, wrapped.Dir = cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Dir
	err = wrapped.Run()
	data, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("the measuring process wrote no peak: %v (run: %v)", rerr, err)
	}
	kib, _ = strconv.ParseInt(string(data), 10, 64)
	return kib, err
}

const (
	measureArgvEnv = "CROW_TEST_MEASURE_ARGV"
	measureOutEnv  = "CROW_TEST_MEASURE_OUT"
)

// runMeasured is the test binary started by measurePeak: it runs the
// command, writes its peak RSS in KiB, and exits as it did.
func runMeasured() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(measureArgvEnv)), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "measure: bad argv:", err)
		return 2
	}
	out := os.Getenv(measureOutEnv)
	os.Unsetenv(measureArgvEnv)
	os.Unsetenv(measureOutEnv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 2
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if werr := os.WriteFile(out, []byte(strconv.FormatInt(peak, 10)), 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "measure:", werr)
		return 2
	}
	return cmd.ProcessState.ExitCode()
}

// peakRSSKiB is VmHWM of a live process, 0 without /proc.
func peakRSSKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
