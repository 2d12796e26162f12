package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// serverSessions are the test server's sessions, oldest first.
func (ts *testServer) serverSessions() []*mcp.ServerSession {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]*mcp.ServerSession(nil), ts.sessions...)
}

func statusOf(t *testing.T, m *Manager, name string) (sdk.MCPServer, bool) {
	for _, s := range m.Status(t.Context(), anAdmin) {
		if s.Name == name {
			return s, true
		}
	}
	return sdk.MCPServer{}, false
}

func TestApplyAddsEditsDisablesRemoves(t *testing.T) {
	t.Parallel()
	f := setup(t, Server{Name: "a", Include: []string{"echo", "write"}})
	require.Equal(t, []string{"a__echo", "a__write"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Equal(t, 1, f.ts.dials())

	// Add: listed at once, connected lazily, on its first use.
	f.m.Apply(testConfig(Server{Name: "a", Include: []string{"echo", "write"}}, Server{Name: "b", Include: []string{"idem"}}))
	require.True(t, f.m.Has(ServerID("b")))
	require.Equal(t, 1, f.ts.dials(), "adding connects nothing")
	require.Equal(t, []string{"a__echo", "a__write", "b__idem"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Equal(t, 2, f.ts.dials(), "a, unchanged, kept its connection")

	// Edit: the old connection is closed, the next use reconnects with the new settings.
	first := f.ts.serverSessions()[0]
	f.m.Apply(testConfig(Server{Name: "a", Include: []string{"echo"}}, Server{Name: "b", Include: []string{"idem"}}))
	_ = first.Wait() // a's old session ended (its error is the closed pipe)
	require.Equal(t, []string{"a__echo", "b__idem"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Equal(t, 3, f.ts.dials())

	// Disable: still listed, disconnected, its tools gone from the next step.
	bSession := f.ts.serverSessions()[1]
	f.m.Apply(testConfig(Server{Name: "a", Include: []string{"echo"}}, Server{Name: "b", Include: []string{"idem"}, Disabled: true}))
	_ = bSession.Wait() // b's session ended (its error is the closed pipe)
	require.Equal(t, []string{"a__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	st, ok := statusOf(t, f.m, "b")
	require.True(t, ok)
	require.Equal(t, sdk.MCPStateDisabled, st.State)
	require.Empty(t, f.m.Tools(t.Context(), anAdmin, []uuid.UUID{ServerID("b")}))
	require.Equal(t, 3, f.ts.dials(), "a disabled server is not connected")

	// Remove: gone from the list, the selection and Has.
	aSession := f.ts.serverSessions()[2]
	f.m.Apply(testConfig(Server{Name: "b", Include: []string{"idem"}, Disabled: true}))
	_ = aSession.Wait() // a's session ended (its error is the closed pipe)
	require.Empty(t, f.m.Tools(t.Context(), anAdmin, nil))
	require.False(t, f.m.Has(ServerID("a")))
	_, ok = statusOf(t, f.m, "a")
	require.False(t, ok)

	// Enable again: connects on use.
	f.m.Apply(testConfig(Server{Name: "b", Include: []string{"idem"}}))
	require.Equal(t, []string{"b__idem"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
	require.Equal(t, 4, f.ts.dials())
}

func TestApplyEndsAnInFlightCall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	slow := find(t, f.m.Tools(t.Context(), anAdmin, nil), "t__slow")
	errc := make(chan error, 1)
	go func() {
		_, err := slow.Run(t.Context(), json.RawMessage(`{}`))
		errc <- err
	}()
	<-f.ts.slowStarted
	f.m.Apply(Config{})
	err := <-errc
	require.ErrorContains(t, err, "MCP server t was removed or changed during the call")
	<-f.ts.slowEnded

	// A tool kept from before the removal does not reconnect its server.
	_, err = slow.Run(t.Context(), json.RawMessage(`{}`))
	require.ErrorContains(t, err, "MCP server t was removed or changed")
	require.Equal(t, 1, f.ts.dials())
}

func TestApplyAfterCloseIsHarmless(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.NoError(t, f.m.Close())
	f.m.Apply(testConfig(Server{Name: "u"}))
	require.Nil(t, f.m.Tools(t.Context(), anAdmin, nil))
	require.Equal(t, 0, f.ts.dials())
}
