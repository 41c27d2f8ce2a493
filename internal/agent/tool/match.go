package tool

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The edit ladder: models quote the text they want to replace with shifted
// whitespace, tabs turned into spaces, typographic quotes or line numbers
// copied from a read (crush PR #3452, qwen-code PR #3061, gemini-cli
// #10995). An exact match is tried first; each tolerant rung after it is
// applied only when it finds exactly one place, and the result says which
// rung matched.

// replacement is one edit to apply: old text, its replacement, whether
// every occurrence is replaced, and how many places the model said there
// are (gemini's expected_replacements; 0 when it did not say).
type replacement struct {
	Old, New string
	All      bool
	Expect   int
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
		// What stripping copied line numbers can leave ("12\t").
		return replaced{}, &matchError{"old_string is empty: quote the exact text to replace"}
	}
	if res, ok, err := replaceText(text, r.Old, r, file, ""); ok || err != nil {
		return res, err
	}
	if res, ok, err := tolerant(text, r, file); ok || err != nil {
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

// places decides whether r applies to the n places a rung found (how is
// the rung, "" for an exact match; lines names where they are, worked out
// only for an error): one place,
// or every one with replace_all or a matching expected_replacements. The
// error says what the model can do.
func (r replacement) places(n int, how, file string, lines func() string) error {
	after := ""
	if how != "" {
		after = " after " + how
	}
	switch {
	case r.Expect > 0 && n != r.Expect:
		return &matchError{fmt.Sprintf("expected_replacements is %d, but old_string matches %d %s%s in %s (lines %s); nothing was changed. Send expected_replacements=%d to change all of them, or quote more lines to pick the places",
			r.Expect, n, plural(n, "place", "places"), after, file, lines(), n)}
	case n > 1 && !r.All && r.Expect == 0:
		return &matchError{fmt.Sprintf("old_string matches %d places%s in %s (lines %s); add surrounding lines to make it unique, or set replace_all=true",
			n, after, file, lines())}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// every reports whether r replaces every place it finds.
func (r replacement) every() bool { return r.All || r.Expect > 1 }

// span is a byte range of the text that a replacement replaces, with what
// goes there.
type span struct {
	start, end int
	new        string
}

// replaceText replaces old, standing for r's old text, in text: at its
// one place, or at every one when r replaces every place. ok is false when
// old is not in text.
func replaceText(text, old string, r replacement, file, how string) (replaced, bool, error) {
	n := strings.Count(text, old)
	if n == 0 {
		return replaced{}, false, nil
	}
	if err := r.places(n, how, file, func() string { return lineList(text, old) }); err != nil {
		return replaced{}, false, err
	}
	if !r.every() {
		n = 1
	}
	return replaced{text: strings.Replace(text, old, r.New, n), count: n, line: lineAt(text, strings.Index(text, old)), how: how}, true, nil
}

// replaceSpans replaces the first span, or every one when r replaces every
// place.
func replaceSpans(text string, spans []span, r replacement, how string) replaced {
	if !r.every() {
		spans = spans[:1]
	}
	var b strings.Builder
	prev := 0
	for _, s := range spans {
		b.WriteString(text[prev:s.start])
		b.WriteString(s.new)
		prev = s.end
	}
	b.WriteString(text[prev:])
	return replaced{text: b.String(), count: len(spans), line: lineAt(text, spans[0].start), how: how}
}

func joinHow(a, b string) string {
	if b == "" {
		return a
	}
	return a + " and " + b
}

// tolerant tries the rungs after the exact match. ok reports that r
// applied; err that a rung found places r cannot apply to (several,
// without replace_all), which stops the ladder.
func tolerant(text string, r replacement, file string) (replaced, bool, error) {
	// Line endings: old_string in the other ending than the file's.
	if eol := lineEnding(text); eol != "" {
		if old := withLineEndings(r.Old, eol); old != r.Old {
			if res, ok, err := replaceText(text, old, r, file, "normalising line endings"); ok || err != nil {
				return res, ok, err
			}
		}
	}
	// Typographic quotes, within a line or across lines.
	if hasCurly(text) || hasCurly(r.Old) {
		nt, offs := asciiQuotes(text)
		no, _ := asciiQuotes(r.Old)
		if n := strings.Count(nt, no); n > 0 {
			// nt has text's lines: only quotes changed.
			if err := r.places(n, "normalising quotes", file, func() string { return lineList(nt, no) }); err != nil {
				return replaced{}, false, err
			}
			return replaceQuoted(text, nt, no, offs, r), true, nil
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
		if res, ok, err := lineMatch(text, r, file, rung.how, rung.norm, rung.indent); ok || err != nil {
			return res, ok, err
		}
	}
	return replaced{}, false, nil
}

// replaceQuoted replaces no, found in nt (text with ASCII quotes; offs maps
// its offsets to text's), with r's new text in text: the first place, or
// every one when r replaces every place. It writes as it finds, so a
// replace_all of a one-character old text in a large file holds no list
// of places.
func replaceQuoted(text, nt, no string, offs []int, r replacement) replaced {
	var b strings.Builder
	res := replaced{how: "normalising quotes"}
	prev := 0
	for off := 0; res.count == 0 || r.every(); {
		i := strings.Index(nt[off:], no)
		if i < 0 {
			break
		}
		start, end := offs[off+i], offs[off+i+len(no)]
		if res.count == 0 {
			res.line = lineAt(text, start)
		}
		b.WriteString(text[prev:start])
		b.WriteString(r.New)
		prev, off = end, off+i+max(len(no), 1)
		res.count++
	}
	b.WriteString(text[prev:])
	res.text = b.String()
	return res
}

// fileLine is a line of the file without its ending.
type fileLine struct {
	text     string
	start    int // byte offset of the line
	end      int // byte offset after its text (before "\r\n" or "\n")
	hasBreak bool
}

// next is the offset of the line after l (after its line break).
func (l fileLine) next(text string) int {
	if !l.hasBreak {
		return l.end
	}
	return l.end + strings.IndexByte(text[l.end:], '\n') + 1
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
// under norm and, where r may apply to them, replaces them with new's
// lines (re-indented to each window's indentation when indent is set).
func lineMatch(text string, r replacement, file, how string, norm func(string) string, indent bool) (replaced, bool, error) {
	oldLines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(r.Old, "\r\n", "\n"), "\n"), "\n")
	lines := splitFileLines(text)
	found := lineWindows(lines, oldLines, norm)
	if len(found) == 0 {
		return replaced{}, false, nil
	}
	at := func() string {
		var ls []string
		for _, i := range found[:min(len(found), 5)] {
			ls = append(ls, fmt.Sprint(i+1))
		}
		return strings.Join(ls, ", ")
	}
	if err := r.places(len(found), how, file, at); err != nil {
		return replaced{}, false, err
	}
	if !r.every() {
		found = found[:1]
	}
	spans := make([]span, len(found))
	for k, i := range found {
		region := lines[i : i+len(oldLines)]
		s, ok := regionReplacement(text, region, oldLines, r, indent)
		if !ok && len(found) == 1 {
			return replaced{}, false, nil // not a uniform shift: no match
		}
		if !ok {
			return replaced{}, false, &matchError{fmt.Sprintf("old_string matches %d places in %s only after %s, and at line %d the file's indentation is not old_string's shifted evenly, so new_string cannot be re-indented there; nothing was changed. Copy old_string exactly from the file (read_file shows it), or edit the places one at a time",
				len(found), file, how, i+1)}
		}
		spans[k] = s
	}
	return replaceSpans(text, spans, r, how), true, nil
}

// lineWindows lists the starts of the windows of lines equal to old's
// lines under norm, first to last without overlapping.
func lineWindows(lines []fileLine, oldLines []string, norm func(string) string) []int {
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
		if slices.Equal(normed[i:i+len(want)], want) {
			found = append(found, i)
			i += len(want) - 1
		}
	}
	return found
}

// regionReplacement is the span of text that region (the file's lines
// matched by old's lines) takes, with new's lines in its place, joined
// with the region's line ending and re-indented when indent is set.
// Deleting the lines (an empty new_string) takes their line break too.
func regionReplacement(text string, region []fileLine, oldLines []string, r replacement, indent bool) (span, bool) {
	first, last := region[0], region[len(region)-1]
	if r.New == "" {
		return span{first.start, last.next(text), ""}, true
	}
	eol := cmp.Or(lineEnding(text), "\n")
	if first.hasBreak {
		eol = text[first.end:first.next(text)]
	}
	newLines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(r.New, "\r\n", "\n"), "\n"), "\n")
	if indent {
		var ok bool
		if newLines, ok = reindent(region, oldLines, newLines); !ok {
			return span{}, false
		}
	}
	return span{first.start, last.end, strings.Join(newLines, eol)}, true
}

// reindent maps new's indentation onto the file's: old and the file's lines
// must differ by one uniform shift of columns (trying common tab widths),
// which is then applied to new; lines use tabs when the file's region does.
// A new text already at the file's indentation where old is not (the model
// indented one and not the other: gemini-cli's edit tests) is kept as
// written rather than shifted twice.
func reindent(region []fileLine, oldLines, newLines []string) ([]string, bool) {
	useTabs := false
	for _, l := range region {
		if strings.HasPrefix(l.text, "\t") {
			useTabs = true
		}
	}
	for _, tw := range []int{4, 8, 2} {
		delta, exact, ok := shift(region, oldLines, tw)
		if !ok {
			continue
		}
		out := make([]string, len(newLines))
		keep := alreadyIndented(region, oldLines, newLines)
		for k, nl := range newLines {
			ni := leading(nl)
			switch fi, ok := exact[ni]; {
			case strings.TrimSpace(nl) == "":
				out[k] = ""
			case keep:
				out[k] = nl
			case ok:
				out[k] = fi + nl[len(ni):]
			default:
				col := max(width(ni, tw)+delta, 0)
				ind := strings.Repeat(" ", col)
				if useTabs {
					ind = strings.Repeat("\t", col/tw) + strings.Repeat(" ", col%tw)
				}
				out[k] = ind + nl[len(ni):]
			}
		}
		return out, true
	}
	return nil, false
}

// shift is the uniform difference in columns (tabs tw wide) between old's
// lines and the file's, and each indentation of old as the file writes it;
// ok is false when the difference is not the same on every line.
func shift(region []fileLine, oldLines []string, tw int) (delta int, exact map[string]string, ok bool) {
	exact = map[string]string{} // old indentation -> file indentation, as written
	set := false
	for k, ol := range oldLines {
		if strings.TrimSpace(ol) == "" {
			continue
		}
		fi, oi := leading(region[k].text), leading(ol)
		d := width(fi, tw) - width(oi, tw)
		if set && d != delta {
			return 0, nil, false
		}
		delta, set = d, true
		exact[oi] = fi
	}
	return delta, exact, true
}

// alreadyIndented reports whether new's first line with text is indented
// as the file's first matched line is, while old's is not.
func alreadyIndented(region []fileLine, oldLines, newLines []string) bool {
	k, n := firstNonBlank(oldLines), firstNonBlank(newLines)
	if k < 0 || n < 0 {
		return false
	}
	fi := leading(region[k].text)
	return leading(newLines[n]) == fi && leading(oldLines[k]) != fi
}

func firstNonBlank(lines []string) int {
	return slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) != "" })
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

// lineList names the lines where sub starts (the first few, each once).
func lineList(text, sub string) string {
	var ls []string
	line, counted := 1, 0
	for off := 0; len(ls) < 5 && off <= len(text); {
		i := strings.Index(text[off:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(text[counted:off+i], "\n")
		counted = off + i
		if l := fmt.Sprint(line); len(ls) == 0 || ls[len(ls)-1] != l {
			ls = append(ls, l)
		}
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
	s = clipLine(s, maxMatchLine)
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
