package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// evictPageCache drops the file's pages from the page cache, so that the
// next exec reads it in as a freshly booted machine would. Pages still
// dirty from the build are written back first: the kernel keeps those.
func evictPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
