package tool

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The edit ladder: models quote the text they want to replace with shifted
// whitespace, tabs turned into spaces, typographic quotes or line numbers
// copied from a read (crush PR #3452, qwen-code PR #3061, gemini-cli
// #10995). An exact match is tried first; each tolerant rung after it is
// applied only when it finds exactly one place, and the result says which
// rung matched.

// replacement is one edit to apply: old text, its replacement, and whether
// every occurrence is replaced.
type replacement struct {
	Old, New string
	All      bool
}

// replaced is what applying a replacement did.
type replaced struct {
	text  string // the new text
	count int    // replacements made
	line  int    // 1-based line of the first one
	how   string // "" for an exact match, else the rung ("normalising indentation")
}

// matchError is an edit that found no unique place; the message is written
// for the model and shows the nearest real lines.
type matchError struct{ msg string }

func (e *matchError) Error() string { return e.msg }

// maxLadderLines bounds the line-based rungs and the nearest-lines search:
// beyond it only the exact match is tried.
const maxLadderLines = 50000

// applyReplacement applies r to text (file is its display name, for
// messages).
func applyReplacement(text string, r replacement, file string) (replaced, error) {
	if r.Old == "" {
		// Also what stripping copied line numbers can leave ("12\t").
		return replaced{}, &matchError{"old_string is empty: quote the exact text to replace (to create a file use write_file)"}
	}
	if n := strings.Count(text, r.Old); n > 0 {
		if n > 1 && !r.All {
			return replaced{}, &matchError{fmt.Sprintf("old_string matches %d places in %s (lines %s); add surrounding lines to make it unique, or set replace_all=true",
				n, file, lineList(text, r.Old))}
		}
		count := 1
		if r.All {
			count = n
		}
		return replaced{text: strings.Replace(text, r.Old, r.New, count), count: count, line: lineAt(text, strings.Index(text, r.Old))}, nil
	}
	if res, ok, err := tolerant(text, r); ok || err != nil {
		return res, err
	}
	// Line numbers copied from read_file's output: strip them when every
	// line of old_string carries one and the stripped text matches.
	if old, ok := stripLineNumbers(r.Old); ok {
		nr := r
		nr.Old = old
		if n, ok := stripLineNumbers(r.New); ok {
			nr.New = n
		}
		if res, err := applyReplacement(text, nr, file); err == nil {
			res.how = joinHow("removing line-number prefixes", res.how)
			return res, nil
		}
	}
	return replaced{}, &matchError{noMatch(text, r.Old, file)}
}

func joinHow(a, b string) string {
	if b == "" {
		return a
	}
	return a + " and " + b
}

// tolerant tries the rungs after the exact match. ok reports a unique
// match; err an ambiguous one (several places), which stops the ladder.
func tolerant(text string, r replacement) (replaced, bool, error) {
	// Line endings: the file has CRLF and the model sent LF, or the reverse.
	if strings.Contains(text, "\r\n") && !strings.Contains(r.Old, "\r\n") {
		crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
		if n := strings.Count(text, crlf(r.Old)); n == 1 {
			i := strings.Index(text, crlf(r.Old))
			return replaced{text: strings.Replace(text, crlf(r.Old), crlf(r.New), 1), count: 1, line: lineAt(text, i), how: "normalising line endings"}, true, nil
		}
	}
	if strings.Contains(r.Old, "\r\n") && !strings.Contains(text, "\r\n") {
		lf := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
		if n := strings.Count(text, lf(r.Old)); n == 1 {
			i := strings.Index(text, lf(r.Old))
			return replaced{text: strings.Replace(text, lf(r.Old), lf(r.New), 1), count: 1, line: lineAt(text, i), how: "normalising line endings"}, true, nil
		}
	}
	// Typographic quotes, within a line or across lines.
	if hasCurly(text) || hasCurly(r.Old) {
		nt, offs := asciiQuotes(text)
		no, _ := asciiQuotes(r.Old)
		switch n := strings.Count(nt, no); {
		case n == 1:
			i := strings.Index(nt, no)
			start, end := offs[i], offs[i+len(no)]
			return replaced{text: text[:start] + r.New + text[end:], count: 1, line: lineAt(text, start), how: "normalising quotes"}, true, nil
		case n > 1:
			return replaced{}, false, &matchError{fmt.Sprintf("old_string matches %d places once quotes are normalised; add surrounding lines to make it unique", n)}
		}
	}
	if strings.Count(text, "\n") > maxLadderLines {
		return replaced{}, false, nil
	}
	for _, rung := range []struct {
		how    string
		norm   func(string) string
		indent bool
	}{
		{"ignoring trailing whitespace", func(s string) string { return strings.TrimRight(s, " \t\r") }, false},
		{"normalising indentation", func(s string) string { return curly.Replace(strings.TrimSpace(s)) }, true},
	} {
		res, n := lineMatch(text, r, rung.norm, rung.indent)
		if n == 1 {
			res.how = rung.how
			return res, true, nil
		}
		if n > 1 {
			return replaced{}, false, &matchError{fmt.Sprintf("old_string matches %d places after %s; add surrounding lines to make it unique", n, rung.how)}
		}
	}
	return replaced{}, false, nil
}

// fileLine is a line of the file without its ending.
type fileLine struct {
	text     string
	start    int // byte offset of the line
	end      int // byte offset after its text (before "\r\n" or "\n")
	hasBreak bool
}

func splitFileLines(text string) []fileLine {
	var out []fileLine
	for start := 0; start < len(text); {
		i := strings.IndexByte(text[start:], '\n')
		l := fileLine{start: start, hasBreak: i >= 0}
		if i < 0 {
			l.end = len(text)
		} else {
			l.end = start + i
		}
		next := l.end + 1
		if l.end > start && text[l.end-1] == '\r' && l.hasBreak {
			l.end--
		}
		l.text = text[l.start:l.end]
		out = append(out, l)
		if !l.hasBreak {
			break
		}
		start = next
	}
	return out
}

// lineMatch finds the windows of whole lines of text equal to old's lines
// under norm. With exactly one, it replaces those lines with new's lines
// (re-indented to the file's indentation when indent is set).
func lineMatch(text string, r replacement, norm func(string) string, indent bool) (replaced, int) {
	oldLines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(r.Old, "\r\n", "\n"), "\n"), "\n")
	lines := splitFileLines(text)
	want := make([]string, len(oldLines))
	for i, l := range oldLines {
		want[i] = norm(l)
	}
	normed := make([]string, len(lines))
	for i, l := range lines {
		normed[i] = norm(l.text)
	}
	var found []int
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for k, w := range want {
			if normed[i+k] != w {
				ok = false
				break
			}
		}
		if ok {
			found = append(found, i)
		}
	}
	if len(found) != 1 {
		return replaced{}, len(found)
	}
	i := found[0]
	region := lines[i : i+len(oldLines)]
	newText := strings.TrimSuffix(strings.ReplaceAll(r.New, "\r\n", "\n"), "\n")
	newLines := strings.Split(newText, "\n")
	if indent {
		var ok bool
		if newLines, ok = reindent(region, oldLines, newLines); !ok {
			return replaced{}, 0
		}
	}
	eol := "\n"
	if strings.Contains(text[region[0].start:], "\r\n") && text[region[0].end:min(region[0].end+2, len(text))] == "\r\n" {
		eol = "\r\n"
	}
	last := region[len(region)-1]
	body := strings.Join(newLines, eol)
	if newText == "" && r.New == "" {
		// Deleting the lines: take the line break with them.
		end := last.end
		if last.hasBreak {
			end += len(eol)
		}
		return replaced{text: text[:region[0].start] + text[end:], count: 1, line: i + 1}, 1
	}
	return replaced{text: text[:region[0].start] + body + text[last.end:], count: 1, line: i + 1}, 1
}

// reindent maps new's indentation onto the file's: old and the file's lines
// must differ by one uniform shift of columns (trying common tab widths),
// which is then applied to new; lines use tabs when the file's region does.
func reindent(region []fileLine, oldLines, newLines []string) ([]string, bool) {
	useTabs := false
	for _, l := range region {
		if strings.HasPrefix(l.text, "\t") {
			useTabs = true
		}
	}
	for _, tw := range []int{4, 8, 2} {
		delta, set, ok := 0, false, true
		exact := map[string]string{} // old indentation -> file indentation, as written
		for k, ol := range oldLines {
			if strings.TrimSpace(ol) == "" {
				continue
			}
			fi, oi := leading(region[k].text), leading(ol)
			d := width(fi, tw) - width(oi, tw)
			if set && d != delta {
				ok = false
				break
			}
			delta, set = d, true
			exact[oi] = fi
		}
		if !ok {
			continue
		}
		out := make([]string, len(newLines))
		for k, nl := range newLines {
			if strings.TrimSpace(nl) == "" {
				out[k] = ""
				continue
			}
			ni := leading(nl)
			if fi, ok := exact[ni]; ok {
				out[k] = fi + nl[len(ni):]
				continue
			}
			col := max(width(ni, tw)+delta, 0)
			ind := strings.Repeat(" ", col)
			if useTabs {
				ind = strings.Repeat("\t", col/tw) + strings.Repeat(" ", col%tw)
			}
			out[k] = ind + nl[len(ni):]
		}
		return out, true
	}
	return nil, false
}

func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

func width(ind string, tw int) int {
	w := 0
	for _, c := range ind {
		if c == '\t' {
			w += tw - w%tw
		} else {
			w++
		}
	}
	return w
}

var curly = strings.NewReplacer("“", `"`, "”", `"`, "„", `"`, "‘", "'", "’", "'", "‚", "'")

func hasCurly(s string) bool { return curly.Replace(s) != s }

// asciiQuotes replaces typographic quotes with ASCII ones; offs maps each
// byte offset of the result (and its end) to the offset in s.
func asciiQuotes(s string) (string, []int) {
	var b strings.Builder
	offs := make([]int, 0, len(s)+1)
	for i, c := range s {
		switch c {
		case '“', '”', '„':
			c = '"'
		case '‘', '’', '‚':
			c = '\''
		}
		n := b.Len()
		b.WriteRune(c)
		for range b.Len() - n {
			offs = append(offs, i)
		}
	}
	offs = append(offs, len(s))
	return b.String(), offs
}

// lineNumberPrefix is what read_file puts before each line ("  12\t"),
// and the other forms models copy ("12|", "12 | ", "L12: ").
//
// Compiled on first use: package initialisers run before initialize is
// answered (TestStartupInitCost).
var lineNumberPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*L?\d+(?:\t| ?\| ?|: |→)`) })

// stripLineNumbers removes a line-number prefix from every line of s, if
// every non-empty line has one.
func stripLineNumbers(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	seen := false
	for i, l := range lines {
		if l == "" && i == len(lines)-1 {
			continue
		}
		m := lineNumberPrefix().FindString(l)
		if m == "" {
			return "", false
		}
		lines[i], seen = l[len(m):], true
	}
	return strings.Join(lines, "\n"), seen
}

// lineAt is the 1-based line of byte offset i.
func lineAt(text string, i int) int { return 1 + strings.Count(text[:i], "\n") }

// lineList names the lines where sub starts (the first few).
func lineList(text, sub string) string {
	var ls []string
	for off := 0; len(ls) < 5 && off <= len(text); {
		i := strings.Index(text[off:], sub)
		if i < 0 {
			break
		}
		ls = append(ls, fmt.Sprint(lineAt(text, off+i)))
		off += i + max(len(sub), 1)
	}
	return strings.Join(ls, ", ")
}

// noMatch explains a failed match and shows the nearest real lines.
func noMatch(text, old, file string) string {
	msg := fmt.Sprintf("old_string not found in %s (tried exact, line endings, quotes, trailing whitespace, indentation).", file)
	if near := nearestLines(text, old); near != "" {
		msg += " The most similar lines in the file (→ tab, · trailing space):\n" + near +
			"\nCopy the text exactly from the file (read_file shows it), then retry."
	} else {
		msg += " Read the file and copy the text exactly."
	}
	return msg
}

// nearestLines finds the window of the file's lines most like old's lines
// (by the words they share) and shows it with line numbers and visible
// whitespace; "" when nothing is alike.
func nearestLines(text, old string) string {
	lines := splitFileLines(text)
	oldLines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(old, "\r\n", "\n"), "\n"), "\n")
	if len(lines) == 0 || len(lines) > maxLadderLines {
		return ""
	}
	// Bound the work: lines × compared lines stays under 2M word-set
	// comparisons.
	oldLines = oldLines[:min(len(oldLines), 200, max(1, 2_000_000/len(lines)))]
	oldWords := make([]map[string]bool, len(oldLines))
	for i, l := range oldLines {
		oldWords[i] = words(l)
	}
	fileWords := make([]map[string]bool, len(lines))
	for i, l := range lines {
		fileWords[i] = words(l.text)
	}
	best, bestScore := 0, 0.0
	for i := 0; i < len(lines); i++ {
		score := 0.0
		for k := range oldLines {
			if i+k < len(lines) {
				score += jaccard(oldWords[k], fileWords[i+k])
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if bestScore < 0.3 {
		return ""
	}
	end := min(best+len(oldLines), len(lines), best+30)
	return showLines(lines, best, end)
}

// showLines renders lines[from:to] with 1-based numbers and visible
// whitespace.
func showLines(lines []fileLine, from, to int) string {
	var b strings.Builder
	w := len(fmt.Sprint(to))
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%*d| %s\n", w, i+1, visible(lines[i].text))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// visible shows tabs as → and trailing spaces as ·, and cuts a long line.
func visible(s string) string {
	if len(s) > maxMatchLine {
		s = s[:maxMatchLine] + "…"
	}
	body := strings.TrimRight(s, " ")
	return strings.ReplaceAll(body, "\t", "→") + strings.Repeat("·", len(s)-len(body))
}

var wordRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9_]+|[^\sA-Za-z0-9_]`) })

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range wordRe().FindAllString(s, 64) {
		m[w] = true
	}
	return m
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// placeholderRe matches a comment that stands for code left out ("//
// rest of the code unchanged", "... existing code ...", "# (unchanged)"),
// once comment markers are removed.
var placeholderRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:\.\.\.|…)?\s*\(?\s*(?:rest of (?:the )?(?:code|file|function|method|class|implementation|body)|(?:the )?(?:existing|remaining|previous|other|unchanged) (?:code|methods|functions|content|implementation|imports)|unchanged|same as before)\s*(?:(?:is |remains |stays |goes )?(?:unchanged|the same|omitted|as before|here|\.\.\.|…|\)|\.|:)\s*)*$`)
})

// commentMarker starts a line that is a comment or an ellipsis.
var commentMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?://+|#+|/\*+|\*+|<!--|--|;+|\.\.\.|…)\s*`) })

// placeholder returns the first line of s that is a placeholder for left-out
// code and does not appear in text, or "".
func placeholder(s, text string) string {
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		m := commentMarker().FindString(t)
		if m == "" {
			continue
		}
		body := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t[len(m):], "*/"), "-->"))
		if strings.HasPrefix(m, "...") || strings.HasPrefix(m, "…") {
			body = m + body
		}
		if placeholderRe().MatchString(body) && !strings.Contains(text, t) {
			return t
		}
	}
	return ""
}
