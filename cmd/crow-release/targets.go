package main

import (
	"strings"
)

// target is one platform crow-acp is released for.
type target struct {
	registry string // the ACP registry's platform key
	triple   string // in the archive name, as codex-acp names them
	npm      string // node's process.platform-process.arch
	exe      string // the binary's name in the archive
}

// targets are every released platform. linux-* are built by `make release`
// (static binaries, see packaging/release.sh); darwin-* and windows-* by
// .github/workflows/release.yml on native runners.
var targets = []target{
	{"linux-x86_64", "x86_64-unknown-linux-gnu", "linux-x64", "crow-acp"},
	{"linux-aarch64", "aarch64-unknown-linux-gnu", "linux-arm64", "crow-acp"},
	{"darwin-x86_64", "x86_64-apple-darwin", "darwin-x64", "crow-acp"},
	{"darwin-aarch64", "aarch64-apple-darwin", "darwin-arm64", "crow-acp"},
	{"windows-x86_64", "x86_64-pc-windows-gnu", "win32-x64", "crow-acp.exe"},
}

// archive is the release archive's file name: a .zip for Windows, a
// .tar.gz elsewhere; the binary, LICENSE and README.md at its root.
func (t target) archive(version string) string {
	ext := ".tar.gz"
	if strings.HasPrefix(t.registry, "windows-") {
		ext = ".zip"
	}
	return "crow-acp-" + version + "-" + t.triple + ext
}

// os and cpu are the npm package's "os" and "cpu" fields.
func (t target) os() string  { o, _, _ := strings.Cut(t.npm, "-"); return o }
func (t target) cpu() string { _, c, _ := strings.Cut(t.npm, "-"); return c }

func byRegistry(name string) (target, bool) {
	for _, t := range targets {
		if t.registry == name {
			return t, true
		}
	}
	return target{}, false
}

func byNPM(name string) (target, bool) {
	for _, t := range targets {
		if t.npm == name {
			return t, true
		}
	}
	return target{}, false
}
