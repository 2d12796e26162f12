package api

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		origin, own string
		same        bool
	}{
		{"http://chat.example", "http://chat.example", true},
		{"HTTP://Chat.Example", "http://chat.example", true},
		{"http://chat.example:80", "http://chat.example", true},
		{"https://chat.example", "https://chat.example:443", true},
		{"http://[::1]:8080", "http://[::1]:8080", true},
		{"https://chat.example", "http://chat.example", false},
		{"http://chat.example:8081", "http://chat.example:8080", false},
		{"http://chat.example:443", "https://chat.example", false},
		{"http://evil.chat.example", "http://chat.example", false},
		{"http://chat.example.evil", "http://chat.example", false},
		{"http://chat.example/", "http://chat.example", false},
		{"http://user@chat.example", "http://chat.example", false},
		{"null", "http://chat.example", false},
		{"chat.example", "http://chat.example", false},
		{"", "http://chat.example", false},
		{"http://%zz", "http://chat.example", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.same, sameOrigin(tc.origin, tc.own), "%q vs %q", tc.origin, tc.own)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := ParseTrustedProxies(" 10.1.2.3/8, 127.0.0.1,::1 ,, ::ffff:192.168.0.0/112 ")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("192.168.0.0/16"),
	}, got)
	none, err := ParseTrustedProxies("")
	require.NoError(t, err)
	require.Empty(t, none)
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8,nope", "1.2.3"} {
		_, err := ParseTrustedProxies(bad)
		require.Error(t, err, bad)
	}
}

func TestParseCookieSecure(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]CookieSecureMode{"": CookieSecureAuto, "auto": CookieSecureAuto, " TRUE ": CookieSecureAlways, "false": CookieSecureNever} {
		got, err := ParseCookieSecure(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := ParseCookieSecure("1")
	require.Error(t, err)
}

// TestClientIP: a per-client limit is keyed on the peer, unless the peer
// is a trusted proxy: then on the nearest untrusted X-Forwarded-For hop,
// so a client cannot pick its own key by sending the header itself.
func TestClientIP(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	}}}
	cases := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"direct client", "203.0.113.7:5000", nil, "203.0.113.7"},
		{"direct client claiming a hop", "203.0.113.7:5000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"one trusted proxy", "10.1.2.3:443", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entries are ignored", "10.1.2.3:443", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", "[::1]:443", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several header lines", "10.1.2.3:443", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1"},
		{"trusted proxy without the header", "10.1.2.3:443", nil, "10.1.2.3"},
		{"garbage hop stops the walk", "10.1.2.3:443", []string{"198.51.100.1, nonsense"}, "10.1.2.3"},
		{"mapped IPv4", "[::ffff:10.1.2.3]:443", []string{"198.51.100.1"}, "198.51.100.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, "http://chat.example/api/v2/auth/login", nil)
			require.NoError(t, err)
			r.RemoteAddr = c.remote
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, c.want, s.clientIP(r))
		})
	}
}
