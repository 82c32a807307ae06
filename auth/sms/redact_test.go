package sms

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestRedactURL: userinfo, query values and the fragment are ***; the
// scheme, host, path and query keys stay; what does not parse is never
// repeated.
func TestRedactURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"https://sms.example/codes", "https://sms.example/codes"},
		{"https://user:pass@gw.example/send?apikey=SECRET", "https://***@gw.example/send?apikey=***"},
		{"http://user@127.0.0.1:9/send", "http://***@127.0.0.1:9/send"},
		{"https://gw.example/send?apikey=SECRET&from=shop&&empty=", "https://gw.example/send?apikey=***&from=***&&empty=***"},
		{"https://gw.example/send?SECRET", "https://gw.example/send?***"},
		{"https://gw.example/send?", "https://gw.example/send?"},
		{"https://gw.example/a%2Fb?k=v#SECRET", "https://gw.example/a%2Fb?k=***#***"},
		{"HTTPS://GW.example/x", "https://GW.example/x"},
		{"https:user:pass@gw.example", "https:***"},
		{"https://user:pa%zzss@gw.example/?k=SECRET", "(unparseable URL)"},
		{"https://gw.example:port/?k=SECRET", "(unparseable URL)"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedactedErr: the *url.Error of a failed POST shows the URL
// redacted and still unwraps to its cause.
func TestRedactedErr(t *testing.T) {
	cause := errors.New("connection refused")
	err := redactedErr(&url.Error{Op: "Post", URL: "http://user:***@gw.example/send?apikey=SECRET", Err: cause})
	if s := err.Error(); strings.Contains(s, "user") || strings.Contains(s, "SECRET") || !strings.Contains(s, "http://***@gw.example/send?apikey=***") {
		t.Errorf("got %q, want the URL redacted", s)
	}
	if !errors.Is(err, cause) {
		t.Errorf("got %v, want it to unwrap to its cause", err)
	}
	if other := errors.New("other"); redactedErr(other) != other {
		t.Errorf("an error other than *url.Error changed")
	}
}
