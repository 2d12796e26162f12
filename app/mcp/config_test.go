package mcp

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{
	  "globalShortcut": "ignored",
	  "mcpServers": {
	    "fs": {"command": "node", "args": ["fs.js", "/srv"], "env": {"TOKEN": "${NOT_EXPANDED}"},
	           "tools": {"include": ["read_file"], "exclude": ["write_file"]},
	           "effects": {"read_file": "pure"}, "timeout": "5s", "unknown": 1,
	           "approval": "effectful", "approvals": {"delete_file": "always", "read_file": "never"}},
	    "Remote-1": {"url": "https://host/mcp", "headers": {"Authorization": "Bearer x"}, "disabled": true}
	  }
	}`))
	require.NoError(t, err)
	require.Equal(t, Config{Servers: []Server{
		{
			Name: "Remote-1", ID: ServerID("Remote-1"), URL: "https://host/mcp",
			Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: DefaultTimeout, Disabled: true,
			Approval: "never",
		},
		{
			Name: "fs", ID: ServerID("fs"), Command: "node", Args: []string{"fs.js", "/srv"},
			Env: map[string]string{"TOKEN": "${NOT_EXPANDED}"}, Include: []string{"read_file"}, Exclude: []string{"write_file"},
			Effects: map[string]string{"read_file": "pure"}, Timeout: 5 * time.Second,
			Approval: "effectful", Approvals: map[string]string{"delete_file": "always", "read_file": "never"},
		},
	}}, cfg)
	fs, remote := cfg.Servers[1], cfg.Servers[0]
	require.Equal(t, "always", fs.ApprovalOf("delete_file"), "a tool's own entry")
	require.Equal(t, "never", fs.ApprovalOf("read_file"), "a tool's own entry may be looser than its server's")
	require.Equal(t, "effectful", fs.ApprovalOf("write_file"), "the server's policy")
	require.Equal(t, "never", remote.ApprovalOf("anything"), "the default")
	require.Equal(t, "never", Server{}.ApprovalOf("x"), "an unparsed server's default")

	empty, err := ParseConfig([]byte(`{"mcpServers": {}}`))
	require.NoError(t, err)
	require.Empty(t, empty.Servers)
}

func TestServerIDIsStable(t *testing.T) {
	t.Parallel()
	// The id is part of the wire contract (mcp_server_ids): it must never
	// change for a name.
	require.Equal(t, uuid.MustParse("9167ad28-746b-5f50-9573-a9dd5fb63bfe"), ServerID("everything"))
	require.Equal(t, ServerID("everything"), ServerID("everything"))
	require.NotEqual(t, ServerID("everything"), ServerID("Everything"))
	require.Equal(t, uuid.Version(5), ServerID("fs").Version())
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, json, want string }{
		{"not json", `{`, "mcp config: not a JSON object"},
		{"no mcpServers", `{"servers": {}}`, `mcp config: no "mcpServers" object`},
		{"mcpServers not object", `{"mcpServers": []}`, `mcp config: "mcpServers" must be an object of servers`},
		{"duplicate", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `server "a" is given twice`},
		{"bad name", `{"mcpServers": {"my_fs": {"command": "x"}}}`, `mcp config: server "my_fs": name: must be 1 to 32 letters, digits or '-'`},
		{"long name", `{"mcpServers": {"abcdefghijabcdefghijabcdefghijabc": {"command": "x"}}}`, `name: must be 1 to 32`},
		{"server not object", `{"mcpServers": {"a": "npx"}}`, `mcp config: server "a": must be an object`},
		{"neither", `{"mcpServers": {"a": {"args": ["x"]}}}`, `mcp config: server "a": command or url: one is required`},
		{"empty command", `{"mcpServers": {"a": {"command": ""}}}`, `mcp config: server "a": command: must not be empty`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `mcp config: server "a": command, url: give one, not both`},
		{"command type", `{"mcpServers": {"a": {"command": ["npx"]}}}`, `mcp config: server "a": command: must be a string`},
		{"args type", `{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, `mcp config: server "a": args: must be an array of strings`},
		{"env type", `{"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}`, `mcp config: server "a": env: must be an object of strings`},
		{"headers on stdio", `{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, `mcp config: server "a": headers: only for a url server`},
		{"env on url", `{"mcpServers": {"a": {"url": "http://h", "env": {"A": "b"}}}}`, `mcp config: server "a": args, env: only for a command server`},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://h/x"}}}`, `mcp config: server "a": url: must be an http:// or https:// URL`},
		{"relative url", `{"mcpServers": {"a": {"url": "/mcp"}}}`, `mcp config: server "a": url: must be an http://`},
		{"headers type", `{"mcpServers": {"a": {"url": "http://h", "headers": ["A: b"]}}}`, `mcp config: server "a": headers: must be an object of strings`},
		{"tools type", `{"mcpServers": {"a": {"command": "x", "tools": {"include": "read"}}}}`, `mcp config: server "a": tools: must be an object`},
		{"effect value", `{"mcpServers": {"a": {"command": "x", "effects": {"write": "safe"}}}}`, `mcp config: server "a": effects.write: "safe" is not pure, idempotent or effectful`},
		{"timeout", `{"mcpServers": {"a": {"command": "x", "timeout": 60}}}`, `mcp config: server "a": timeout: must be a duration string such as "60s"`},
		{"timeout parse", `{"mcpServers": {"a": {"command": "x", "timeout": "1 minute"}}}`, `mcp config: server "a": timeout: "1 minute" is not a positive duration`},
		{"timeout zero", `{"mcpServers": {"a": {"command": "x", "timeout": "0s"}}}`, `mcp config: server "a": timeout: "0s" is not a positive duration`},
		{"approval value", `{"mcpServers": {"a": {"command": "x", "approval": "sometimes"}}}`, `mcp config: server "a": approval: "sometimes" is not never, effectful or always`},
		{"approval type", `{"mcpServers": {"a": {"command": "x", "approval": true}}}`, `mcp config: server "a": approval: must be never, effectful or always`},
		{"approvals value", `{"mcpServers": {"a": {"command": "x", "approvals": {"rm": "yes"}}}}`, `mcp config: server "a": approvals.rm: "yes" is not never, effectful or always`},
		{"approvals type", `{"mcpServers": {"a": {"command": "x", "approvals": ["rm"]}}}`, `mcp config: server "a": approvals: must be an object of tool name to never, effectful or always`},
		{"disabled type", `{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}`, `mcp config: server "a": disabled: must be true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`), 0o600))
	_, err := LoadConfig(path)
	require.ErrorContains(t, err, path+`: mcp config: server "a": timeout: "soon"`)

	_, err = LoadConfig(filepath.Join(dir, "missing.json"))
	require.ErrorContains(t, err, "mcp config: open")
}
