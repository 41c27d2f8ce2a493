//go:build !linux

package main

import "errors"

func evictPageCache(string) error { return errors.New("not supported on this system") }
