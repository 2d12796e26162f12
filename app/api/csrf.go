package api

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/chatd/chatd/app/sdk"
)

// Cross-site request forgery. A browser attaches the session cookie to
// requests that other pages start, and SameSite=Strict does not stop pages
// of the same site (another port or subdomain). So a state change that
// the session cookie authenticates must come from the server's own origin
// and carry JSON, which a page of another origin cannot send without a
// CORS preflight that chatd never grants. Requests authenticated by a
// header token (Authorization: Bearer, Coder-Session-Token) are not
// affected: a browser never adds those on its own. Login is checked the
// same way whatever its credentials, so that a page cannot log a visitor
// into the page author's account.

// CookieSecureMode says when the session cookie is marked Secure.
type CookieSecureMode string

// The session cookie's Secure modes.
const (
	// CookieSecureAuto marks it Secure when the request came over HTTPS:
	// TLS to chatd, or X-Forwarded-Proto: https from a trusted proxy.
	CookieSecureAuto CookieSecureMode = "auto"
	// CookieSecureAlways always marks it Secure.
	CookieSecureAlways CookieSecureMode = "true"
	// CookieSecureNever never marks it Secure.
	CookieSecureNever CookieSecureMode = "false"
)

// ParseCookieSecure reads a CookieSecureMode; "" is CookieSecureAuto.
func ParseCookieSecure(s string) (CookieSecureMode, error) {
	switch m := CookieSecureMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return CookieSecureAuto, nil
	case CookieSecureAuto, CookieSecureAlways, CookieSecureNever:
		return m, nil
	}
	return "", fmt.Errorf("cookie secure mode %q: want auto, true or false", s)
}

// ParseTrustedProxies reads a comma-separated list of CIDR prefixes or
// single addresses ("10.0.0.0/8, 127.0.0.1"); "" is none.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", f, err)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", f, err)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// fromTrustedProxy reports whether the request's peer is a configured
// trusted proxy, whose X-Forwarded-Proto and X-Forwarded-For chatd
// believes.
func (s *Server) fromTrustedProxy(r *http.Request) bool {
	a, ok := peerAddr(r)
	return ok && s.trusted(a)
}

// trusted reports whether a is one of the configured trusted proxies.
func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the connection's peer address.
func peerAddr(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// clientIP is the address a per-client limit is keyed on: the peer, or,
// when the peer is a trusted proxy, the nearest address in
// X-Forwarded-For that is not a trusted proxy itself (the right-most
// entries are the ones the trusted proxies appended; anything to their
// left is what the client claimed).
func (s *Server) clientIP(r *http.Request) string {
	a, ok := peerAddr(r)
	if !ok {
		return r.RemoteAddr
	}
	if !s.trusted(a) {
		return a.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		hop = hop.Unmap()
		if !s.trusted(hop) {
			return hop.String()
		}
		a = hop
	}
	return a.String()
}

// scheme is how the client reached chatd: "https" over TLS or when a
// trusted proxy says so in X-Forwarded-Proto, "http" otherwise.
func (s *Server) scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if s.fromTrustedProxy(r) {
		// A chain of proxies lists the client-facing one first.
		proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		if strings.EqualFold(strings.TrimSpace(proto), "https") {
			return "https"
		}
	}
	return "http"
}

// secureCookie reports whether the session cookie is marked Secure.
func (s *Server) secureCookie(r *http.Request) bool {
	switch s.cfg.CookieSecure {
	case CookieSecureAlways:
		return true
	case CookieSecureNever:
		return false
	}
	return s.scheme(r) == "https"
}

// safeMethod: methods that change nothing, which the forgery check skips.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// isLogin: the login routes, checked whatever the credentials.
func isLogin(p string) bool {
	return p == "/api/v2/auth/login" || p == "/api/experimental/auth/login"
}

// checkForgery refuses a state change that the session cookie would
// authenticate, and any login, unless it comes from the server's own
// origin and carries JSON (or no body at all).
func (s *Server) checkForgery(r *http.Request) error {
	if safeMethod(r.Method) {
		return nil
	}
	if _, fromCookie := requestToken(r); !fromCookie && !isLogin(r.URL.Path) {
		return nil
	}
	// Sec-Fetch-Site and Origin are set by the browser, never by a page.
	// "none" is a request the user made directly, without any page.
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return forbidden(fmt.Sprintf("Sec-Fetch-Site is %q: only pages of this server may change state with its session cookie", site))
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if own := s.scheme(r) + "://" + r.Host; !sameOrigin(origin, own) {
			return forbidden(fmt.Sprintf("Origin %q is not this server's origin %q", origin, own))
		}
	}
	if isUpload(r) {
		return requireUploadHeader(r) // files.go: an upload is not JSON
	}
	return requireJSON(r)
}

// requireJSON refuses a body of any type but JSON. A request without a
// body (and without a Content-Type) carries nothing a form could have put
// there; interrupt, delete and logout send none.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return forbidden(fmt.Sprintf("Content-Type %q: a request authenticated by the session cookie must send application/json", ct))
}

func forbidden(detail string) *apiError {
	return newError(http.StatusForbidden, sdk.CodeForbidden, "Cross-site request refused.", detail)
}

// sameOrigin compares an Origin header with scheme://host, ignoring case
// and default ports.
func sameOrigin(origin, own string) bool {
	o, err := url.Parse(origin)
	if err != nil || o.Scheme == "" || o.Host == "" || o.Path != "" || o.User != nil {
		return false // includes "null", which opaque origins send
	}
	w, err := url.Parse(own)
	if err != nil || w.Host == "" {
		return false
	}
	return strings.EqualFold(o.Scheme, w.Scheme) && hostPort(o) == hostPort(w)
}

// hostPort is u's lower-case host with its port, the scheme's default
// port made explicit.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
