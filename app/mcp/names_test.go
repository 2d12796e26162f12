package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestToolNames(t *testing.T) {
	t.Parallel()
	hash := func(server, tool string) string {
		sum := sha256.Sum256([]byte(server + "/" + tool))
		return hex.EncodeToString(sum[:])[:8]
	}
	long := strings.Repeat("x", 70)
	names := toolNames("fs", []string{
		"read_file", "list-dir", "get.time", "naïve", long,
		"a.b", "a/b", // both sanitize to fs__a_b: both hashed
		"c_d", "c.d", // fs__c_d is c_d's own name: c_d keeps it
	})
	require.Equal(t, map[string]string{
		"read_file": "fs__read_file",
		"list-dir":  "fs__list-dir",
		"get.time":  "fs__get_time",
		"naïve":     "fs__na_ve",
		long:        "fs__" + strings.Repeat("x", 51) + "_" + hash("fs", long),
		"a.b":       "fs__a_b_" + hash("fs", "a.b"),
		"a/b":       "fs__a_b_" + hash("fs", "a/b"),
		"c_d":       "fs__c_d",
		"c.d":       "fs__c_d_" + hash("fs", "c.d"),
	}, names)
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for _, n := range names {
		require.Regexp(t, valid, n)
		require.False(t, seen[n], n)
		seen[n] = true
	}
	require.Len(t, names[long], 64)

	// Exactly 64 characters is still readable.
	exact := strings.Repeat("y", 60)
	require.Equal(t, "fs__"+exact, toolNames("fs", []string{exact})[exact])
}

func TestToolNamesIgnoreOrder(t *testing.T) {
	t.Parallel()
	require.Equal(t, toolNames("s", []string{"a.b", "a_b", "a/b"}), toolNames("s", []string{"a/b", "a_b", "a.b"}))
}
