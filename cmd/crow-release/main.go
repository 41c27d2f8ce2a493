// Command crow-release writes the release metadata `make release` ships: the ACP
// registry entry and the npm packages (the crow-acp launcher and one
// package per platform holding its binary).
//
//	go run ./cmd/crow-release registry -version 1.2.3 -out DIR
//	go run ./cmd/crow-release npm-launcher -version 1.2.3 -out DIR
//	go run ./cmd/crow-release npm-platform -version 1.2.3 -platform linux-x64 -binary FILE -out DIR
//	go run ./cmd/crow-release archive -version 1.2.3 -platform linux-x86_64
//
// Every name (archive, target triple, npm platform) comes from the table
// in targets.go, so the archives, the registry entry, the npm packages and
// the CI workflow cannot drift apart.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "crow-release:", err)
		os.Exit(2)
	}
}

// semver is what the registry's schema and npm accept as a version.
var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: crow-release registry|npm-launcher|npm-platform|archive [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	version := fs.String("version", "", "release version, x.y.z")
	out := fs.String("out", "", "output directory")
	platform := fs.String("platform", "", "registry platform (linux-x86_64) or npm platform (linux-x64)")
	binary := fs.String("binary", "", "npm-platform: the crow-acp binary to package")
	root := fs.String("root", ".", "the repository root (LICENSE, packaging/)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if !semver.MatchString(*version) {
		return fmt.Errorf("-version %q is not x.y.z (semantic version)", *version)
	}
	needOut := func() error {
		if *out == "" {
			return errors.New("-out is required")
		}
		return os.MkdirAll(*out, 0o755)
	}
	switch args[0] {
	case "registry":
		if err := needOut(); err != nil {
			return err
		}
		return writeRegistry(*version, *root, *out)
	case "npm-launcher":
		if err := needOut(); err != nil {
			return err
		}
		return writeLauncher(*version, *root, *out)
	case "npm-platform":
		if err := needOut(); err != nil {
			return err
		}
		t, ok := byNPM(*platform)
		if !ok {
			return fmt.Errorf("unknown npm platform %q", *platform)
		}
		if *binary == "" {
			return errors.New("-binary is required")
		}
		return writePlatform(*version, t, *binary, *root, *out)
	case "archive":
		t, ok := byRegistry(*platform)
		if !ok {
			return fmt.Errorf("unknown platform %q", *platform)
		}
		_, err := fmt.Fprintln(stdout, t.archive(*version))
		return err
	}
	return fmt.Errorf("unknown command %q", args[0])
}
