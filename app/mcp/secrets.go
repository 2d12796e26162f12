package mcp

import (
	"net/url"
	"slices"
)

// secretValues are the values of s's settings that are secrets: every env
// and header value (chatd cannot tell which hold keys), and the URL's
// password and query values.
func (s Server) secretValues() []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, v := range m {
			out = append(out, v)
		}
	}
	if s.OAuth != nil && s.OAuth.ClientSecret != "" {
		out = append(out, s.OAuth.ClientSecret)
	}
	if u, err := url.Parse(s.URL); err == nil && s.URL != "" {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
