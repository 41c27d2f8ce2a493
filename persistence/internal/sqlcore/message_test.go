package sqlcore

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/persistence"
)

// TestSettersKnowEveryField keeps setPart and setToolCall in step with the
// json tags of Part and ToolCall: a field they miss would send every
// column holding it through encoding/json (right, but slow).
func TestSettersKnowEveryField(t *testing.T) {
	check := func(typ reflect.Type, set func(key string, v reflect.Value) bool) {
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			v := reflect.New(typ)
			if !set(key, v) || v.Elem().Field(i).String() != "x" {
				t.Errorf("%s.%s (%q) is not decoded by its setter", typ.Name(), typ.Field(i).Name, key)
			}
		}
	}
	check(reflect.TypeFor[persistence.Part](), func(key string, v reflect.Value) bool {
		return setPart(v.Interface().(*persistence.Part), key, "x")
	})
	check(reflect.TypeFor[persistence.ToolCall](), func(key string, v reflect.Value) bool {
		return setToolCall(v.Interface().(*persistence.ToolCall), key, "x")
	})
}

// TestJoinedColumns: the joined read selects MessageColumns, in order,
// and then the record's body.
func TestJoinedColumns(t *testing.T) {
	split := func(s string) []string {
		var out []string
		for _, c := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	var want []string
	for _, c := range split(MessageColumns) {
		want = append(want, "m."+c)
	}
	if got := split(strings.TrimSuffix(messageColumnsOfM, ", ")); !slices.Equal(got, want) {
		t.Errorf("messageColumnsOfM = %q\nwant %q", got, want)
	}
}
