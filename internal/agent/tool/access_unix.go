//go:build unix

package tool

import (
	"io/fs"
	"os"
	"syscall"
)

// openReadFlags open a file for reading without blocking (a FIFO swapped in
// after the check opens at once instead of waiting for a writer) and
// without following a last component that became a symlink.
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW

// hardLinks is the link count of a file (1 when unknown).
func hardLinks(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
