package tool

import "strings"

// defaultReadLines is how many lines read_file and read_output return
// without a limit.
const defaultReadLines = 400

// lineWindow is the first line (1-based) and the number of lines to read,
// with the defaults for those the model left out: from the first line,
// defaultReadLines of them.
func lineWindow(offset, limit int) (int, int) {
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = defaultReadLines
	}
	return offset, limit
}

// splitLines splits text into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

// fenced shows file text as a Markdown code block for the client.
func fenced(name, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence
}

// utf8BOM is the byte-order mark some editors put first in a file.
const utf8BOM = "\ufeff"

// lineEnding is the line ending most of text's lines have ("" when it has
// no line break).
func lineEnding(text string) string {
	lf := strings.Count(text, "\n")
	if lf == 0 {
		return ""
	}
	if crlf := strings.Count(text, "\r\n"); crlf*2 > lf {
		return "\r\n"
	}
	return "\n"
}

// withLineEndings gives every line break of s the ending eol.
func withLineEndings(s, eol string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if eol == "\r\n" {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// maxMatchLine is how much of a long line search results and the lines
// around a failed match show.
const maxMatchLine = 240

// clipLine cuts s to its first n bytes, marking the cut with "…".
func clipLine(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
