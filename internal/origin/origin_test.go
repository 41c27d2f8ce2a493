package origin

import (
	"net/url"
	"testing"
)

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://api.example.test/v1", "https://api.example.test/other", true},
		{"https://api.example.test", "https://API.example.test:443/x", true},
		{"http://127.0.0.1/v1", "http://127.0.0.1:80", true},
		{"http://[::1]:8080/a", "http://[::1]:8080/b", true},
		{"https://api.example.test", "http://api.example.test", false},
		{"https://api.example.test", "https://api.example.test:8443", false},
		{"https://api.example.test", "https://evil.test", false},
		{"https://api.example.test", "https://api.example.test.evil.test", false},
		{"http://127.0.0.1:1234", "http://127.0.0.1:1235", false},
		{"http://127.0.0.1:80", "https://127.0.0.1:443", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := Same(a, b); got != tc.same {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
