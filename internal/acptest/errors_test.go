package acptest

import (
	"strings"
	"testing"
)

func TestReadableError(t *testing.T) {
	cases := []struct {
		frame string
		ok    bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"The prompt is empty."}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"` + "`x`" + ` is missing."}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"sessionId is required"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"SessionId is required"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":""}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Two\nlines."}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Failed.","data":"` + strings.Repeat("x", 600) + `"}}`, false},
	}
	for _, c := range cases {
		err := ReadableError([]byte(c.frame))
		if (err == nil) != c.ok {
			t.Errorf("%.80s: got %v, want ok=%v", c.frame, err, c.ok)
		}
	}
}
