package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxInitBytes bounds what the packages' initialisers allocate before
// main runs: every editor that launches crow-acp pays for them before
// initialize is answered. A syntax highlighter's lexer registry once cost
// 4.7 MB and about 50 ms here; our own packages' regular expressions,
// Markdown parser, highlighter tables and CRC table (now built on first
// use) another 220 KB. Today's total is about 660 KB, nearly all of it
// dependencies' (goldmark's entity tables and expressions, openai-go's
// responses unions, jsonschema-go). Bytes, not time: GODEBUG=inittrace's
// allocation counts do not depend on the load.
const maxInitBytes = 800 << 10

// maxOwnInitBytes bounds our own packages' share (about 30 KB today): a
// table or regular expression that answering initialize does not need is
// built on first use (sync.OnceValue), not by a package initialiser.
const maxOwnInitBytes = 64 << 10

func TestStartupInitCost(t *testing.T) {
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crow-acp version: %v\n%s", err, stderr.Bytes())
	}
	type pkg struct {
		name  string
		bytes int
	}
	var pkgs, own []pkg
	total, ownTotal := 0, 0
	// init internal/bytealg @0.001 ms, 0.003 ms clock, 0 bytes, 0 allocs
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		pkgs = append(pkgs, pkg{f[1], n})
		total += n
		if strings.HasPrefix(f[1], "github.com/crow-acp/crow-acp/") {
			own = append(own, pkg{f[1], n})
			ownTotal += n
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("no inittrace lines on stderr:\n%s", stderr.Bytes())
	}
	if total > maxInitBytes {
		sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].bytes > pkgs[j].bytes })
		t.Errorf("package initialisers allocate %d bytes before main, more than %d; the largest: %v", total, maxInitBytes, pkgs[:min(5, len(pkgs))])
	}
	if ownTotal > maxOwnInitBytes {
		sort.Slice(own, func(i, j int) bool { return own[i].bytes > own[j].bytes })
		t.Errorf("our packages' initialisers allocate %d bytes, more than %d; the largest: %v", ownTotal, maxOwnInitBytes, own[:min(5, len(own))])
	}
	t.Logf("%d packages initialised, %d bytes (%d by our own)", len(pkgs), total, ownTotal)
}
