package api

import (
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
