package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxToolName is the longest tool name every provider accepts.
const maxToolName = 64

// sanitize is SERVER__TOOL with every character outside [a-zA-Z0-9_-]
// replaced by '_'.
func sanitize(server, tool string) string {
	var b strings.Builder
	b.WriteString(server)
	b.WriteString("__")
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// hashedName is the long or colliding form: the first 55 characters of
// the sanitized name, '_' and the first 8 hex digits of
// sha256("SERVER/TOOL").
func hashedName(server, tool, sanitized string) string {
	sum := sha256.Sum256([]byte(server + "/" + tool))
	return sanitized[:min(len(sanitized), 55)] + "_" + hex.EncodeToString(sum[:4])
}

// toolNames maps a server's tool names to the names the model sees:
// SERVER__TOOL, sanitized. A name over 64 characters takes the hashed
// form, and so do the names of a group that sanitize to the same string,
// except the one (if any) that needed no sanitizing, which keeps its
// readable name. The result does not depend on the order of tools.
func toolNames(server string, tools []string) map[string]string {
	groups := map[string][]string{}
	for _, t := range tools {
		s := sanitize(server, t)
		groups[s] = append(groups[s], t)
	}
	out := make(map[string]string, len(tools))
	for s, group := range groups {
		for _, t := range group {
			switch {
			case len(s) > maxToolName:
				out[t] = hashedName(server, t, s)
			case len(group) == 1 || server+"__"+t == s:
				out[t] = s
			default:
				out[t] = hashedName(server, t, s)
			}
		}
	}
	return out
}
