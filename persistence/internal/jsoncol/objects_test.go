package jsoncol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// call has the shape of the columns DecodeObjects reads (persistence.ToolCall).
type call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"arguments,omitempty"`
}

func setCall(c *call, key, val string) bool {
	switch key {
	case "id":
		c.ID = val
	case "name":
		c.Name = val
	case "arguments":
		c.Args = val
	default:
		return false
	}
	return true
}

// checkSameAsJSON fails unless DecodeObjects returns what encoding/json
// (DecodeSlice) returns for b: the same calls, or an error for both.
func checkSameAsJSON(t *testing.T, b []byte) {
	t.Helper()
	want, wantErr := DecodeSlice[call]("calls", b)
	got, err := DecodeObjects("calls", string(b), setCall)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", b, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%q: decoded %#v, encoding/json %#v", b, got, want)
	}
}

var objectSeeds = []string{
	`[]`, `[{}]`, `null`, ` []`, `[] `, `[{},{}]`, `[`, `]`, `[{`, `[{"id"`, `[{"id":`, `[{"id":"a"`, `[{"id":"a"}`,
	`[{"id":"call_1","name":"read_file","arguments":"{\"path\":\"/src/main.go\"}"}]`,
	`[{"id":"a","name":"b"},{"id":"c","name":"d","arguments":""}]`,
	`[{"id":"a","id":"b"}]`,                    // last wins
	`[{"ID":"a"}]`, `[{"other":"x","id":"a"}]`, // loose and unknown keys: encoding/json's rules
	`[{"id":null}]`, `[{"id":1}]`, `[{"id":["a"]}]`, // not strings
	`[{ "id":"a"}]`, `[{"id" :"a"}]`, `[{"id":"a"} ]`, `[{"id":"a"},]`, `[{"id":"a"}]x`, `[{"id":"a",}]`,
	`[{"id":"tab\there"}]`, "[{\"id\":\"raw\ttab\"}]", "[{\"id\":\"nul\x00\"}]", "[{\"id\":\"\x1f\"}]",
	`[{"id":"\b\f\n\r\t\"\\\/"}]`, `[{"id":"\u00e9\u20ac\uD83E\uDD80"}]`, `[{"id":"\uD83E"}]`, `[{"id":"\uDD80\uD83E"}]`,
	`[{"id":"\uD83E\u0041"}]`, `[{"id":"\uD83Ex"}]`, `[{"id":"\u12"}]`, `[{"id":"\uZZZZ"}]`, `[{"id":"\x"}]`, `[{"id":"\`,
	"[{\"id\":\"lone \xff byte, cut \xe2\x82 sequence, emoji 🦀\"}]", "[{\"id\":\"\xed\xa0\x80\"}]",
	"[{\"\xff\":\"a\"}]", `[{"i\u0064":"a"}]`,
	"[{\"id\":\"" + strings.Repeat("a long text with \\\"quotes\\\" and é ", 4000) + "\"}]",
	"[" + strings.Repeat(`{"id":"a","name":"b"},`, 2000) + `{}]`,
}

func TestDecodeObjectsIsEncodingJSON(t *testing.T) {
	for _, s := range objectSeeds {
		checkSameAsJSON(t, []byte(s))
	}
}

func TestDecodeObjectsRoundTrip(t *testing.T) {
	in := []call{{ID: "call_1", Name: "edit", Args: `{"path":"a.go","old":"x\ty","new":"<é 🦀>"}`}, {ID: "2"}}
	col, err := Slice("calls", in)
	if err != nil {
		t.Fatal(err)
	}
	b := col.(string)
	if _, ok := decodeObjects(b, setCall); !ok {
		t.Errorf("%s: what Slice writes is not read without encoding/json", b)
	}
	got, err := DecodeObjects("calls", b, setCall)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("round trip = %#v, %v; want %#v", got, err, in)
	}
}

func FuzzDecodeObjects(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSameAsJSON(t, b)
		// What encoding/json writes for what was read reads back the same.
		if v, err := DecodeSlice[call]("calls", b); err == nil && v != nil {
			enc, _ := json.Marshal(v)
			checkSameAsJSON(t, enc)
		}
	})
}
