package gitignore

import (
	"strings"
	"testing"
)

func FuzzGitignore(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n/a/**/b\n[a-\n\\#x\n", "a/x/b")
	f.Add("\x00\xff[!]]\n**\n", "\xc3\x28/y")
	f.Add("   \n \n!\n/\n", "x") // lines of spaces crashed the parser
	f.Add(strings.Repeat("a*", 3000), strings.Repeat("a", 5000))
	// Many wildcard-heavy lines against a long path: what a hostile
	// .gitignore would do to make every search crawl (it hung this target).
	f.Add(strings.Repeat(strings.Repeat("*a", 400)+"\n", 4), strings.Repeat("ab/", 400))
	f.Fuzz(func(t *testing.T, text, name string) {
		if len(name) > 4096 { // no path beneath a root is longer (PATH_MAX)
			name = name[:4096]
		}
		ps := Parse(text)
		if len(ps) > strings.Count(text, "\n")+1 {
			t.Fatalf("%d patterns from %d lines", len(ps), strings.Count(text, "\n")+1)
		}
		Match(ps, name, false)
		Match(ps, name, true)
	})
}

// TestHostileGitignoreIsBounded: a workspace's .gitignore is untrusted.
// Matching a path costs time in proportion to the wildcards kept (each
// keeps a matcher thread alive along the path), so one file keeps at most
// maxIgnorePatterns patterns and maxIgnoreWildcards wildcards; a run of
// stars counts once.
func TestHostileGitignoreIsBounded(t *testing.T) {
	lines := func(line string, n int) string { return strings.Repeat(line+"\n", n) }
	if ps := Parse(lines(strings.Repeat("*a", 300), 60)); len(ps) != 0 {
		t.Errorf("%d patterns of 300 wildcards each kept, want none (over the file budget)", len(ps))
	}
	if ps := Parse(lines("node_modules", 3000)); len(ps) != maxIgnorePatterns {
		t.Errorf("%d patterns kept of 3,000, want %d", len(ps), maxIgnorePatterns)
	}
	if ps := Parse(lines("*a*", 800)); len(ps) != maxIgnoreWildcards/2 {
		t.Errorf("%d two-wildcard patterns kept, want %d", len(ps), maxIgnoreWildcards/2)
	}
	ps := Parse("a*****b\n")
	if len(ps) != 1 || !ps[0].re.MatchString("aXYb") || ps[0].re.MatchString("a/b") {
		t.Fatalf("a run of stars is not one star: %v", ps)
	}
	if n := strings.Count(ps[0].re.String(), "[^/]*"); n != 1 {
		t.Errorf("a run of five stars became %d wildcards: %s", n, ps[0].re)
	}
}
