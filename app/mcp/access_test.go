package mcp

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

var (
	alice = tools.User{Name: "alice"}
	bob   = tools.User{Name: "bob"}
)

// TestParseConfigAccess: the access field's three forms, and the default
// when it is left out: admins only for a server with env or headers,
// every user otherwise.
func TestParseConfigAccess(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
	  "keyed":  {"command": "x", "env": {"KEY": "v"}},
	  "hdr":    {"url": "http://h/mcp", "headers": {"Authorization": "Bearer v"}},
	  "plain":  {"command": "x"},
	  "shared": {"command": "x", "env": {"KEY": "v"}, "access": "all"},
	  "locked": {"command": "x", "access": "admins"},
	  "named":  {"command": "x", "env": {"KEY": "v"}, "access": ["bob", "alice", "bob"]},
	  "nulled": {"command": "x", "env": {"KEY": "v"}, "access": null}
	}}`))
	require.NoError(t, err)
	got := map[string]Server{}
	for _, s := range cfg.Servers {
		got[s.Name] = s
	}
	for name, want := range map[string]struct {
		given, effective string
		users            []string
		alice, admin     bool
	}{
		"keyed":  {"", AccessAdmins, nil, false, true},
		"hdr":    {"", AccessAdmins, nil, false, true},
		"plain":  {"", AccessAll, nil, true, true},
		"shared": {AccessAll, AccessAll, nil, true, true},
		"locked": {AccessAdmins, AccessAdmins, nil, false, true},
		"named":  {AccessUsers, AccessUsers, []string{"alice", "bob"}, true, true},
		"nulled": {"", AccessAdmins, nil, false, true},
	} {
		s := got[name]
		require.Equal(t, want.given, s.Access, name)
		require.Equal(t, want.effective, s.EffectiveAccess(), name)
		require.Equal(t, want.users, s.Users, name)
		require.Equal(t, want.alice, s.Allows(alice), name)
		require.Equal(t, want.admin, s.Allows(anAdmin), name)
	}
	require.False(t, got["named"].Allows(tools.User{Name: "carol"}))
	require.False(t, got["plain"].Allows(tools.User{}), "nobody in particular is let in nowhere")
}

func TestParseConfigAccessErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, access, want string }{
		{"word", `"everyone"`, `access: "everyone" is not "all", "admins", or an array of usernames`},
		{"users word", `"users"`, `access: "users" is not "all"`},
		{"number", `1`, `access: must be "all", "admins", or an array of usernames`},
		{"object", `{"users": ["bob"]}`, `access: must be "all", "admins"`},
		{"empty", `[]`, `access: an empty list lets no user in; give "admins" for admins only`},
		{"bad name", `["bob", "a b"]`, `access[1]: "a b" is not a username: no spaces`},
		{"me", `["me"]`, `access[0]: "me" is not a username`},
		{"not strings", `["bob", 2]`, `access: must be "all"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(`{"mcpServers": {"a": {"command": "x", "access": ` + tc.access + `}}}`))
			require.Error(t, err)
			require.Contains(t, err.Error(), `mcp config: server "a": `+tc.want)
		})
	}
}

// TestAccessRoundTripsThroughRows: a server's access survives Row and
// FromRow as given, so a stored server left to the default still follows
// it when its secrets change.
func TestAccessRoundTripsThroughRows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []Server{
		{Name: "d", Command: "x", Env: map[string]string{"K": "v"}},
		{Name: "a", Command: "x", Access: AccessAll, Env: map[string]string{"K": "v"}},
		{Name: "m", Command: "x", Access: AccessAdmins},
		{Name: "u", Command: "x", Access: AccessUsers, Users: []string{"alice", "bob"}},
	} {
		s.ID, s.Timeout = ServerID(s.Name), DefaultTimeout
		row, err := s.Row(store.MCPSourceDatabase, PlainSealer{}, now)
		require.NoError(t, err)
		back, err := FromRow(row, PlainSealer{})
		require.NoError(t, err)
		require.Equal(t, s.Access, back.Access, s.Name)
		require.Equal(t, s.Users, back.Users, s.Name)
		require.Equal(t, s.EffectiveAccess(), back.EffectiveAccess(), s.Name)
	}
}

// TestManagerAccess: Tools, Status and Allows show a user only the
// servers they may use; changing only a server's access keeps its
// connection and takes effect at once.
func TestManagerAccess(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "a", Include: []string{"echo"}}, Server{Name: "b", Include: []string{"echo"}, Access: AccessUsers, Users: []string{"bob"}})
	require.Equal(t, []string{"a__echo", "b__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Equal(t, []string{"a__echo"}, names(f.m.Tools(t.Context(), alice, nil)))
	require.Empty(t, f.m.Tools(t.Context(), alice, []uuid.UUID{ServerID("b")}), "naming a forbidden server does not help")
	require.Equal(t, []string{"a__echo", "b__echo"}, names(f.m.Tools(t.Context(), bob, nil)))
	require.True(t, f.m.Allows(ServerID("b"), bob))
	require.False(t, f.m.Allows(ServerID("b"), alice))
	require.False(t, f.m.Allows(ServerID("nope"), anAdmin))
	var listed []string
	for _, s := range f.m.Status(t.Context(), alice) {
		listed = append(listed, s.Name)
	}
	require.Equal(t, []string{"a"}, listed)
	dials := f.ts.dials()

	// Only the access changes: no new connection, the new rule at once.
	f.m.Apply(testConfig(Server{Name: "a", Include: []string{"echo"}, Access: AccessAdmins}, Server{Name: "b", Include: []string{"echo"}, Access: AccessUsers, Users: []string{"alice"}}))
	require.Equal(t, []string{"b__echo"}, names(f.m.Tools(t.Context(), alice, nil)))
	require.Empty(t, f.m.Tools(t.Context(), bob, nil))
	require.Equal(t, dials, f.ts.dials(), "access is not a connection setting")
}
