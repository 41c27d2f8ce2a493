//go:build unix

package agent

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists on this host.
// A pid reused by another process looks alive: the lease then waits for its
// expiry, which is safe.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
