package chat

import (
	"strings"
	"testing"
)

func TestHighlight(t *testing.T) {
	code := "func main() { // start\n\ts := \"a \\\" b\" + `raw\nline` /* c */\n\treturn 42\n}"
	out := highlight("go", code)
	for _, want := range []string{
		sgrKeyword + "func" + sgrReset,
		sgrKeyword + "return" + sgrReset,
		sgrComment + "// start" + sgrReset,
		sgrString + `"a \" b"` + sgrReset,
		sgrString + "`raw" + sgrReset + "\n" + sgrString + "line`" + sgrReset, // colour ends at each line end
		sgrComment + "/* c */" + sgrReset,
		sgrNumber + "42" + sgrReset,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("highlight lacks %q in %q", want, out)
		}
	}
	if strings.Contains(out, sgrKeyword+"main") {
		t.Error("an identifier was coloured as a keyword")
	}
	if got := stripSGR(out); got != code {
		t.Errorf("the text changed: %q", got)
	}
	if highlight("brainfuck", code) != "" || highlight("", code) != "" {
		t.Error("an unknown language was highlighted")
	}
	if out := highlight("Python", "# c\nx = 'open\ny"); !strings.Contains(out, sgrString+"'open"+sgrReset+"\n") {
		t.Errorf("an unclosed string ran past its line: %q", out)
	}
}
