package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// PATCH /chats/mcp-servers/{id} edits everything the settings form does:
// env and headers whose values the admin cannot see (a null value keeps
// the stored one, a string replaces it, a name left out is removed), the
// include/exclude lists, per-tool effect classes and approvals, and resets
// them with null. The connection test proves which values were stored;
// no answer ever holds a value.
func TestMCPServerPatchSecretsAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const headerSecret, envSecret = "Bearer hdr-secret-8c1f", "env-secret-3b7d"
		rig := newSecretRig(t, newStore(t), "/api/v2", "hdr-secret", envSecret)
		adminToken, userToken, do := rig.adminToken, rig.userToken, rig.do
		server := func(status int, raw []byte) sdk.MCPServer {
			t.Helper()
			require.Contains(t, []int{http.StatusOK, http.StatusCreated}, status, "%s", raw)
			var out sdk.MCPServer
			require.NoError(t, json.Unmarshal(raw, &out))
			require.NotNil(t, out.Config)
			return out
		}

		// An HTTP "MCP server" that records the headers it is sent.
		var mu sync.Mutex
		var got []http.Header
		remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
			http.Error(w, "not an MCP server", http.StatusInternalServerError)
		}))
		t.Cleanup(remote.Close)
		sentHeaders := func(id string) http.Header {
			t.Helper()
			mu.Lock()
			got = nil
			mu.Unlock()
			status, raw := do(adminToken, "POST", "/chats/mcp-servers/"+id+"/test", "")
			require.Equal(t, http.StatusOK, status, "%s", raw)
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, got, "the test connected")
			return got[0]
		}

		status, raw := do(adminToken, "POST", "/chats/mcp-servers", fmt.Sprintf(`{"name":"remote","url":%q,"headers":{"Authorization":null}}`, remote.URL))
		require.Equal(t, http.StatusBadRequest, status, "nothing is stored to keep: %s", raw)
		require.Contains(t, string(raw), "headers.Authorization")

		r := server(do(adminToken, "POST", "/chats/mcp-servers", fmt.Sprintf(`{"name":"remote","url":%q,"headers":{"Authorization":%q,"X-Team":"t1"}}`, remote.URL, headerSecret)))
		id := r.ID.String()
		require.Equal(t, []string{"Authorization", "X-Team"}, r.Config.HeaderKeys)
		h := sentHeaders(id)
		require.Equal(t, headerSecret, h.Get("Authorization"))
		require.Equal(t, "t1", h.Get("X-Team"))

		type step struct {
			name   string
			token  string
			body   string
			status int
			check  func(t *testing.T, cfg sdk.MCPServerConfig)
			sent   func(t *testing.T, h http.Header)
			errIn  string
		}
		steps := []step{
			{name: "keep one header, replace another", token: adminToken, body: `{"headers":{"Authorization":null,"X-Team":"t2"}}`, status: http.StatusOK,
				check: func(t *testing.T, cfg sdk.MCPServerConfig) {
					require.Equal(t, []string{"Authorization", "X-Team"}, cfg.HeaderKeys)
				},
				sent: func(t *testing.T, h http.Header) {
					require.Equal(t, headerSecret, h.Get("Authorization"), "kept")
					require.Equal(t, "t2", h.Get("X-Team"), "replaced")
				}},
			{name: "a header left out is removed", token: adminToken, body: `{"headers":{"Authorization":null}}`, status: http.StatusOK,
				check: func(t *testing.T, cfg sdk.MCPServerConfig) {
					require.Equal(t, []string{"Authorization"}, cfg.HeaderKeys)
				},
				sent: func(t *testing.T, h http.Header) {
					require.Equal(t, headerSecret, h.Get("Authorization"))
					require.Empty(t, h.Get("X-Team"))
				}},
			{name: "null for a header not stored", token: adminToken, body: `{"headers":{"Authorization":null,"X-New":null}}`, status: http.StatusBadRequest, errIn: "headers.X-New"},
			{name: "a header value that is not a string", token: adminToken, body: `{"headers":{"Authorization":3}}`, status: http.StatusBadRequest, errIn: "headers"},
			{name: "tools, effects, approvals", token: adminToken, status: http.StatusOK,
				body: `{"tools":{"include":["echo","add"],"exclude":["add"]},"effects":{"echo":"pure","add":"idempotent"},"approval":"effectful","approvals":{"echo":"always"}}`,
				check: func(t *testing.T, cfg sdk.MCPServerConfig) {
					require.Equal(t, sdk.MCPToolFilter{Include: []string{"echo", "add"}, Exclude: []string{"add"}}, cfg.Tools)
					require.Equal(t, map[string]string{"echo": "pure", "add": "idempotent"}, cfg.Effects)
					require.Equal(t, "effectful", cfg.Approval)
					require.Equal(t, map[string]string{"echo": "always"}, cfg.Approvals)
					require.Equal(t, []string{"Authorization"}, cfg.HeaderKeys, "headers untouched when not given")
				},
				sent: func(t *testing.T, h http.Header) { require.Equal(t, headerSecret, h.Get("Authorization")) }},
			{name: "a bad effect class", token: adminToken, body: `{"effects":{"echo":"sometimes"}}`, status: http.StatusBadRequest, errIn: "echo"},
			{name: "a bad approval", token: adminToken, body: `{"approvals":{"echo":"maybe"}}`, status: http.StatusBadRequest, errIn: "echo"},
			{name: "null resets", token: adminToken, body: `{"tools":null,"effects":null,"approvals":null,"approval":null,"headers":null}`, status: http.StatusOK,
				check: func(t *testing.T, cfg sdk.MCPServerConfig) {
					require.Empty(t, cfg.Tools.Include)
					require.Empty(t, cfg.Tools.Exclude)
					require.Empty(t, cfg.Effects)
					require.Empty(t, cfg.Approvals)
					require.Empty(t, cfg.HeaderKeys)
				},
				sent: func(t *testing.T, h http.Header) { require.Empty(t, h.Get("Authorization")) }},
			{name: "a user", token: userToken, body: `{"headers":{"Authorization":"x"}}`, status: http.StatusForbidden},
			{name: "anonymous", body: `{"headers":{"Authorization":"x"}}`, status: http.StatusUnauthorized},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				status, raw := do(st.token, "PATCH", "/chats/mcp-servers/"+id, st.body)
				require.Equal(t, st.status, status, "%s", raw)
				if st.errIn != "" {
					require.Contains(t, string(raw), st.errIn)
				}
				if st.check != nil {
					st.check(t, *server(status, raw).Config)
				}
				if st.sent != nil {
					st.sent(t, sentHeaders(id))
				}
			})
		}

		// Env of a stdio server: the child writes the variable it got.
		out := filepath.Join(t.TempDir(), "token")
		script := fmt.Sprintf(`printf %%s "$TOKEN/$OTHER" > %s`, out)
		body, err := json.Marshal(map[string]any{"name": "local", "command": "sh", "args": []string{"-c", script},
			"env": map[string]string{"TOKEN": envSecret, "OTHER": "o1"}})
		require.NoError(t, err)
		l := server(do(adminToken, "POST", "/chats/mcp-servers", string(body)))
		require.Equal(t, []string{"OTHER", "TOKEN"}, l.Config.EnvKeys)
		child := func() string {
			t.Helper()
			require.NoError(t, os.RemoveAll(out))
			status, raw := do(adminToken, "POST", "/chats/mcp-servers/"+l.ID.String()+"/test", "")
			require.Equal(t, http.StatusOK, status, "%s", raw)
			b, err := os.ReadFile(out)
			require.NoError(t, err, "the test started the child")
			return string(b)
		}
		require.Equal(t, envSecret+"/o1", child())
		l = server(do(adminToken, "PATCH", "/chats/mcp-servers/"+l.ID.String(), `{"env":{"TOKEN":null,"OTHER":"o2"}}`))
		require.Equal(t, []string{"OTHER", "TOKEN"}, l.Config.EnvKeys)
		require.Equal(t, envSecret+"/o2", child())
		l = server(do(adminToken, "PATCH", "/chats/mcp-servers/"+l.ID.String(), `{"env":{"TOKEN":null}}`))
		require.Equal(t, []string{"TOKEN"}, l.Config.EnvKeys)
		require.Equal(t, envSecret+"/", child())
	})
}
