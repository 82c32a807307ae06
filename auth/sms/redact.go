package sms

import (
	"net/url"
	"strings"
)

// masked stands for a hidden part of a URL.
const masked = "***"

// RedactURL is rawURL as a log or an error may show it: its userinfo,
// each query value and its fragment are ***; the scheme, host, path and
// query keys stay. A query part without "=" is hidden whole. A URL that
// does not parse is "(unparseable URL)", since its text could hold
// anything. Every place that shows a sender's URL goes through it.
func RedactURL(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme + ":")
	}
	if u.Opaque != "" {
		// "https:user:pass@host" parses as opaque: hide it whole.
		b.WriteString(masked)
	} else {
		if u.Host != "" || u.User != nil {
			b.WriteString("//")
			if u.User != nil {
				b.WriteString(masked + "@")
			}
			b.WriteString(u.Host)
		}
		b.WriteString(u.EscapedPath())
	}
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + maskQuery(u.RawQuery))
	}
	if u.Fragment != "" {
		b.WriteString("#" + masked)
	}
	return b.String()
}

// maskQuery keeps each key of a raw query and hides its value.
func maskQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		switch k, _, ok := strings.Cut(p, "="); {
		case p == "":
		case ok:
			parts[i] = k + "=" + masked
		default:
			parts[i] = masked
		}
	}
	return strings.Join(parts, "&")
}

// redactedErr is err, an error of http.Client.Do, with the URL it
// repeats shown by RedactURL: net/http's *url.Error keeps the URL's
// username and query (it masks the password only).
func redactedErr(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	return &url.Error{Op: ue.Op, URL: RedactURL(ue.URL), Err: ue.Err}
}
