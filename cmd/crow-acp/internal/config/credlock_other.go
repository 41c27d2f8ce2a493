//go:build !unix

package config

import "os"

// tryLock: no advisory lock here; concurrent logins may lose a key.
func tryLock(*os.File) (busy bool, err error) { return false, nil }
