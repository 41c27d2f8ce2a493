package tool

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Omission placeholders. A model asked to rewrite a block or a file often
// writes a line standing for the code it left out: "// ... existing code
// ...", "(rest of methods ...)", "# unchanged". Written as sent, that line
// replaces the code (gemini-cli refuses such lines in its
// omissionPlaceholderDetector; crush and opencode write them). A line is a
// placeholder when the whole line is a comment, a bracketed phrase or a
// phrase set off by an ellipsis, and its words say that code was left
// out. The same words after code on the line, or inside a string literal,
// are code and are never taken for one.

// maxPlaceholderLine bounds the lines looked at: a placeholder is short.
const maxPlaceholderLine = 160

// maxPlaceholderWords bounds the words of a placeholder's phrase.
const maxPlaceholderWords = 12

// Word classes of placeholder phrases.
var (
	// Nouns that name code or a part of a file.
	placeholderNouns = wordSet("code file method function func class implementation body component module import " +
		"content contents property prop field member test case logic config configuration definition declaration " +
		"line text html css style script export route handler helper setup program source section block statement " +
		"item entry key rule option setting dependency step element attribute parameter argument variable constant " +
		"type interface struct enum hook state markup template query migration value part portion stuff thing")
	// Nouns that say "code" on their own: "// existing code".
	placeholderCodeNouns = wordSet("code implementation content contents logic")
	// Adjectives of left-out code; the strong ones say it alone.
	placeholderStrongAdj = wordSet("existing unchanged untouched unmodified omitted elided")
	placeholderWeakAdj   = wordSet("remaining other previous original old prior additional more earlier similar same")
	// Words that say on their own that something was left out.
	placeholderOmitted = wordSet("unchanged omitted elided snip snipped truncated skipped untouched unmodified")
	// Those of them that a comment of one word says only as a placeholder.
	placeholderAlone = wordSet("unchanged omitted elided snip snipped")
	// Words after the noun phrase: "... remains the same", "omitted for brevity".
	placeholderTail = wordSet("is are remains remain stays stay left kept goes go was were will be as it they here for not the " +
		"from etc and unchanged same before omitted brevity shown intact identical untouched unmodified elided " +
		"skipped truncated preserved continues continue continued snip snipped")
	// Tail words that say the code is left out: "code omitted", "as before".
	placeholderSignals = wordSet("unchanged same before omitted brevity shown intact identical untouched unmodified " +
		"elided skipped truncated preserved snip snipped")
	placeholderDeterminers = wordSet("the a an all any your this that these those my our its some few n")
	placeholderFillers     = wordSet("plus and then with etc")
	// Verbs of an instruction to keep code: "// keep existing imports".
	placeholderKeep = wordSet("keep keeping insert include including retain leave")
)

// wordClass is a set of lower-case words.
type wordClass map[string]bool

func wordSet(s string) wordClass {
	m := wordClass{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func (m wordClass) has(w string) bool { return m[w] }

// placeholderKey reports whether line is an omission placeholder, and its
// normalised phrase (lower case, single spaces, markers removed), which
// compares the placeholders of two texts.
func placeholderKey(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if t == "" || len(t) > maxPlaceholderLine || strings.IndexByte("/#-;%([{<.", t[0]) < 0 && !strings.HasPrefix(t, "…") {
		return "", false
	}
	body, comment, bracketed := unwrapPlaceholder(t)
	ellipsis := strings.Contains(body, "..") || strings.Contains(body, "…")
	if !ellipsis && (!comment && !bracketed || !mayOmit(body)) {
		return "", false // most comments: no word of a placeholder
	}
	if ellipsis {
		body = cutEllipses(body)
	}
	if strings.ContainsAny(body, "=<>{}\"`$@\\|&+*^~") {
		return "", false // code, not prose
	}
	words := strings.FieldsFunc(strings.ToLower(body), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	if len(words) > maxPlaceholderWords {
		return "", false
	}
	if len(words) == 0 {
		// "// ...", "/* … */": a comment that is only an ellipsis. A bare
		// "..." is Python's Ellipsis, code.
		return "…", comment && ellipsis
	}
	for i, w := range words {
		words[i] = strings.TrimSuffix(strings.Trim(w, "'"), "'s")
	}
	if !omissionPhrase(words, ellipsis) {
		return "", false
	}
	return strings.Join(words, " "), true
}

// omitStems are in every placeholder phrase without an ellipsis (in
// "rest of", a strong adjective, or a tail that says so): a comment with
// none of them is not one, without splitting it into words.
var omitStems = []string{"rest", "exist", "unchanged", "untouched", "unmodified", "omit", "elide", "snip", "truncat",
	"skip", "same", "before", "brevity", "shown", "intact", "identical", "preserved"}

func mayOmit(s string) bool {
	s = strings.ToLower(s)
	for _, w := range omitStems {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// unwrapPlaceholder peels comment markers and brackets off a trimmed line:
// "// x", "# x", "-- x", "; x", "% x", "/* x */", "<!-- x -->", "(x)",
// "[x]", "{x}" ("{/* x */}" in JSX), "<x>".
func unwrapPlaceholder(t string) (body string, comment, bracketed bool) {
	for range 4 {
		before := t
		switch {
		case strings.HasPrefix(t, "<!--"):
			t, comment = strings.TrimSuffix(t[4:], "-->"), true
		case strings.HasPrefix(t, "/*"):
			t, comment = strings.TrimSuffix(t[2:], "*/"), true
		case strings.HasPrefix(t, "//"):
			t, comment = strings.TrimLeft(t, "/!"), true
		case strings.HasPrefix(t, "#"):
			t, comment = strings.TrimLeft(t, "#"), true
		case strings.HasPrefix(t, "--"):
			t, comment = strings.TrimLeft(t, "-"), true
		case strings.HasPrefix(t, ";"):
			t, comment = strings.TrimLeft(t, ";"), true
		case strings.HasPrefix(t, "%"):
			t, comment = strings.TrimLeft(t, "%"), true
		default:
			for _, pair := range []string{"()", "[]", "{}", "<>"} {
				if len(t) >= 2 && t[0] == pair[0] && t[len(t)-1] == pair[1] {
					t, bracketed = t[1:len(t)-1], true
					break
				}
			}
		}
		t = strings.TrimSpace(t)
		if t == before {
			break
		}
	}
	return t, comment, bracketed
}

// cutEllipses replaces every ellipsis ("...", "..", "…") with a space.
func cutEllipses(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "…"):
			b.WriteByte(' ')
			i += len("…")
		case strings.HasPrefix(s[i:], ".."):
			for i < len(s) && s[i] == '.' {
				i++
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// omissionPhrase reports whether words (lower case, markers removed) say
// that code was left out: a noun phrase ("rest of the methods", "existing
// code", "other helpers") and then only tail words ("remains the same",
// "omitted for brevity"). A phrase that could be a real comment
// ("// other methods", "# load config") needs an ellipsis or a tail
// that says so.
func omissionPhrase(words []string, ellipsis bool) bool {
	i, keep := 0, false
	for i < len(words) && (placeholderFillers[words[i]] || placeholderDeterminers[words[i]] || placeholderKeep[words[i]]) {
		keep = keep || placeholderKeep[words[i]]
		i++
	}
	restOf := false
	if i+1 < len(words) && words[i] == "rest" && words[i+1] == "of" {
		restOf, i = true, i+2
	}
	var strong, weak, nouns, unknown int
	codeNoun, omitted := false, false
	// The noun phrase, up to the first word that can only be a tail.
phrase:
	for ; i < len(words); i++ {
		w := words[i]
		switch {
		case placeholderDeterminers[w] || isNumber(w):
		case placeholderStrongAdj[w] && nouns == 0:
			strong++
			omitted = omitted || placeholderOmitted[w]
		case placeholderWeakAdj[w] && nouns == 0:
			weak++
		case isPlaceholderNoun(w):
			nouns++
			codeNoun = codeNoun || placeholderCodeNouns[w]
		case placeholderTail[w]:
			break phrase
		default:
			if nouns > 0 {
				return false // words after the noun that are not a tail
			}
			unknown++
		}
	}
	signal := false
	for ; i < len(words); i++ {
		if !placeholderTail[words[i]] {
			return false
		}
		signal = signal || placeholderSignals[words[i]]
	}
	if unknown > 2 || unknown > 0 && !restOf && strong == 0 && !(weak > 0 && ellipsis) {
		return false
	}
	switch {
	case restOf:
		return true
	case strong > 0 && (codeNoun || keep || omitted && nouns == 0 && unknown == 0 || ellipsis || signal):
		// "existing code", "(unchanged)", "... existing JSX ...".
		return true
	case nouns+weak > 0:
		return ellipsis || signal
	}
	// Only tail words: "(omitted for brevity)", "# unchanged", "same as
	// before", "... truncated ...". A lone "skipped" or "truncated" may
	// be a real comment.
	return signal && (ellipsis || slices.ContainsFunc(words, placeholderAlone.has) || asBefore(words)) ||
		ellipsis && slices.Contains(words, "etc")
}

// asBefore reports whether words say "as before".
func asBefore(words []string) bool {
	for i := 1; i < len(words); i++ {
		if words[i-1] == "as" && words[i] == "before" {
			return true
		}
	}
	return false
}

func isPlaceholderNoun(w string) bool {
	if placeholderNouns[w] {
		return true
	}
	for _, suf := range []string{"s", "es"} {
		if s, ok := strings.CutSuffix(w, suf); ok && placeholderNouns[s] {
			return true
		}
	}
	s, ok := strings.CutSuffix(w, "ies")
	return ok && placeholderNouns[s+"y"]
}

func isNumber(w string) bool {
	return strings.TrimFunc(w, unicode.IsDigit) == ""
}

// newPlaceholder finds a placeholder that after has more often than before
// (a placeholder already in the file, in a template or a doc, may stay or
// move): line is its first line in after, trimmed, and n that line's
// 1-based number; n is 0 when there is none.
func newPlaceholder(before, after string) (line string, n int) {
	var had map[string]int
	type seen struct {
		count, first int
		line         string
	}
	found := map[string]*seen{}
	for i, l := 0, after; l != ""; i++ {
		cur, rest, _ := strings.Cut(l, "\n")
		l = rest
		key, ok := placeholderKey(cur)
		if !ok {
			continue
		}
		if had == nil {
			had = placeholderCounts(before)
		}
		s := found[key]
		if s == nil {
			s = &seen{first: i + 1, line: strings.TrimSpace(cur)}
			found[key] = s
		}
		if s.count++; s.count > had[key] {
			return s.line, s.first
		}
	}
	return "", 0
}

func placeholderCounts(text string) map[string]int {
	m := map[string]int{}
	for l := text; l != ""; {
		cur, rest, _ := strings.Cut(l, "\n")
		l = rest
		if key, ok := placeholderKey(cur); ok {
			m[key]++
		}
	}
	return m
}

// placeholderError is the refusal of a change whose result would hold a
// new placeholder; instead says what to send (it differs per tool).
func placeholderError(line string, n int, instead string) error {
	return fmt.Errorf("line %d of the result, %q, looks like a placeholder for code left out, new in this change: writing it would replace that code with the placeholder. Nothing was changed. %s",
		n, line, instead)
}

// What to send instead of a placeholder, per tool.
const (
	placeholderEditAdvice  = "Send the code itself: in new_string repeat every line you keep, or narrow old_string to the lines that change."
	placeholderWriteAdvice = "Send the whole content with every line you keep, or use edit_file for the lines that change."
	placeholderPatchAdvice = "Keep unchanged lines as context lines (a leading space) instead of replacing them."
)
