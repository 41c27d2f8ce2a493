package chat

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A small highlighter for code blocks: comments, strings, numbers and
// keywords of common languages. chroma did this, but its lexer registry
// parses some 250 embedded lexers when the program starts (about 50 ms
// measured with GODEBUG=inittrace=1), a cost every `crow-acp serve` an
// editor launches would pay for a feature only the chat uses. Colours
// are a reading aid: a token it misreads is only coloured wrongly.

// SGR colours of the highlighter, beside the renderer's own (markdown.go).
const (
	sgrKeyword = "\x1b[35m"
	sgrString  = "\x1b[32m"
	sgrComment = "\x1b[90m"
	sgrNumber  = "\x1b[33m"
)

// syntax is what the highlighter knows of one language.
type syntax struct {
	line     []string // line comment openers
	block    bool     // /* */ comments
	quotes   string   // string delimiters
	keywords map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	cFamily = "break case continue default do else for goto if return switch while const static struct " +
		"enum union typedef sizeof void int char long short float double unsigned signed extern"
	// The keyword sets are built on first use: serve, which links this
	// package, never highlights.
	syntaxes = sync.OnceValue(func() map[string]*syntax {
		return map[string]*syntax{
			"go": {line: []string{"//"}, block: true, quotes: "\"'`", keywords: words("break case chan const continue default defer else " +
				"fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota")},
			"python": {line: []string{"#"}, quotes: "\"'", keywords: words("and as assert async await break class continue def del elif else " +
				"except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield None True False self")},
			"javascript": {line: []string{"//"}, block: true, quotes: "\"'`", keywords: words("async await break case catch class const continue " +
				"default delete do else export extends finally for function if import in instanceof let new of return static super switch " +
				"this throw try typeof var void while yield null undefined true false interface type enum implements readonly")},
			"rust": {line: []string{"//"}, block: true, quotes: "\"", keywords: words("as async await break const continue crate dyn else enum " +
				"extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type " +
				"unsafe use where while Some None Ok Err")},
			"c": {line: []string{"//"}, block: true, quotes: "\"'", keywords: words(cFamily + " class public private protected new delete " +
				"this try catch throw namespace using template typename virtual override final import package extends implements " +
				"interface boolean true false null nullptr fun val var when object")},
			"shell": {line: []string{"#"}, quotes: "\"'`", keywords: words("if then else elif fi for while until do done case esac in " +
				"function return local export set unset echo exit")},
			"sql": {line: []string{"--"}, block: true, quotes: "'\"", keywords: words("select from where and or not insert into values update " +
				"set delete create table index drop alter join left right inner outer on group by order having limit as null is in " +
				"SELECT FROM WHERE AND OR NOT INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE INDEX DROP ALTER JOIN LEFT RIGHT " +
				"INNER OUTER ON GROUP BY ORDER HAVING LIMIT AS NULL IS IN")},
			"ruby": {line: []string{"#"}, quotes: "\"'", keywords: words("begin class def do else elsif end ensure false if module nil " +
				"require rescue return self then true unless until when while yield")},
			"data": {line: []string{"#"}, quotes: "\"'", keywords: words("true false null yes no")}, // JSON, YAML, TOML
		}
	})
	aliases = map[string]string{
		"golang": "go", "py": "python", "python3": "python", "js": "javascript", "jsx": "javascript", "ts": "javascript",
		"tsx": "javascript", "typescript": "javascript", "node": "javascript", "rs": "rust", "cpp": "c", "c++": "c", "cc": "c",
		"h": "c", "hpp": "c", "java": "c", "kotlin": "c", "kt": "c", "swift": "c", "cs": "c", "csharp": "c", "sh": "shell",
		"bash": "shell", "zsh": "shell", "console": "shell", "rb": "ruby", "json": "data", "jsonc": "data", "yaml": "data",
		"yml": "data", "toml": "data", "postgresql": "sql", "sqlite": "sql", "mysql": "sql",
	}
)

// syntaxFor is the language named by a code block's info string, nil when
// it is not one the highlighter knows.
func syntaxFor(lang string) *syntax {
	lang = strings.ToLower(lang)
	if a, ok := aliases[lang]; ok {
		lang = a
	}
	return syntaxes()[lang]
}

// highlight colours code written in lang; "" when lang is unknown.
func highlight(lang, code string) string {
	sx := syntaxFor(lang)
	if sx == nil {
		return ""
	}
	var b strings.Builder
	// paint writes s in colour, ending the colour at each line end so
	// that the renderer's indentation stays uncoloured.
	paint := func(sgr, s string) {
		b.WriteString(sgr + strings.ReplaceAll(s, "\n", sgrReset+"\n"+sgr) + sgrReset)
	}
	for i := 0; i < len(code); {
		rest := code[i:]
		if n := commentLen(sx, rest); n > 0 {
			paint(sgrComment, rest[:n])
			i += n
			continue
		}
		c := rest[0]
		switch {
		case strings.IndexByte(sx.quotes, c) >= 0:
			n := stringLen(rest)
			paint(sgrString, rest[:n])
			i += n
		case c >= '0' && c <= '9':
			n := 1
			for n < len(rest) && (isWordByte(rest[n]) || rest[n] == '.') {
				n++
			}
			paint(sgrNumber, rest[:n])
			i += n
		case isWordStart(rest):
			n := wordLen(rest)
			if sx.keywords[rest[:n]] {
				paint(sgrKeyword, rest[:n])
			} else {
				b.WriteString(rest[:n])
			}
			i += n
		default:
			_, n := utf8.DecodeRuneInString(rest)
			b.WriteString(rest[:n])
			i += n
		}
	}
	return b.String()
}

// commentLen is the length of the comment s starts with (0: none). A
// block comment without its end runs to the end of the code.
func commentLen(sx *syntax, s string) int {
	for _, open := range sx.line {
		if strings.HasPrefix(s, open) {
			if end := strings.IndexByte(s, '\n'); end >= 0 {
				return end
			}
			return len(s)
		}
	}
	if sx.block && strings.HasPrefix(s, "/*") {
		if end := strings.Index(s[2:], "*/"); end >= 0 {
			return end + 4
		}
		return len(s)
	}
	return 0
}

// stringLen is the length of the string literal s starts with, up to its
// closing quote (backslash escapes skipped), or to the line's end for an
// unclosed one; backquoted strings may span lines.
func stringLen(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		case s[i] == '\n' && q != '`':
			return i
		}
	}
	return len(s)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}

func isWordStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r)
}

func wordLen(s string) int {
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break
		}
		n += size
	}
	return n
}
