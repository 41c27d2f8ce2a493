package sqlcore

import (
	"reflect"
	"testing"
)

func TestSliceRoundTripKeepsNilAndEmptyApart(t *testing.T) {
	for _, in := range [][]int{nil, {}, {1, 2}} {
		col, err := JSONSlice("ids", in)
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		if s, ok := col.(string); ok {
			raw = []byte(s)
		}
		out, err := DecodeJSONSlice[int]("ids", raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) || (in == nil) != (out == nil) {
			t.Errorf("%#v came back as %#v", in, out)
		}
	}
	if _, err := DecodeJSONSlice[int]("ids", []byte("{")); err == nil {
		t.Error("bad JSON decoded without error")
	}
}
