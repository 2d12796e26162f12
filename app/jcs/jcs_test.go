package jcs_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/jcs"
)

// The examples of RFC 8785: section 3.2.2 (numbers, strings, literals),
// section 3.2.3 (sorting by UTF-16 code units) and Appendix B (numbers).
func TestRFC8785Examples(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{
			name: "3.2.2",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "3.2.3",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			// What encoding/json escapes and JCS does not.
			name: "html and line separators",
			in:   `{"b":"<a&b>\u2028\u2029","a":[{"z":1,"y":2}]}`,
			want: "{\"a\":[{\"y\":2,\"z\":1}],\"b\":\"<a&b>\u2028\u2029\"}",
		},
		{name: "control characters", in: `"\u0001\u001f\u007f"`, want: "\"\\u0001\\u001f\u007f\""},
		{name: "empty containers", in: ` { "a" : [ ] , "b" : { } } `, want: `{"a":[],"b":{}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := jcs.Canonicalize([]byte(c.in))
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
		})
	}
}

func TestFormatNumberAppendixB(t *testing.T) {
	t.Parallel()
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		got, err := jcs.FormatNumber(math.Float64frombits(c.bits))
		require.NoError(t, err, "%016x", c.bits)
		require.Equal(t, c.want, got, "%016x", c.bits)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := jcs.FormatNumber(f)
		require.ErrorIs(t, err, jcs.ErrNumber)
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{`, `1 2`, `1e400`, ``} {
		_, err := jcs.Canonicalize([]byte(in))
		require.Error(t, err, in)
	}
}
