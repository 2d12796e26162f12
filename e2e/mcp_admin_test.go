package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type answer struct {
	status int
	body   []byte
}

func call(t *testing.T, srv *httptest.Server, token, method, path, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, out}
}

func toolNames(list []sdk.MCPTool) []string {
	out := []string{}
	for _, t := range list {
		out = append(out, t.Name)
	}
	return out
}

// The admin API adds, tests, edits, disables and deletes an MCP server
// (the npm reference server over stdio) at run time; others only read the
// list; bad input gets a 4xx; the env value never comes back.
func TestMCPServersAdminAPI(t *testing.T) {
	t.Parallel()
	everything := mcptest.NPMServer(t, "server-everything")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := apptest.Start(t, apptest.Options{Store: newStore, NoStart: true})
		admin, srv := h.Token, h.Server
		user, _, err := auth.New(h.Store, nil, nil, auth.Config{}).Create(t.Context(), auth.CreateParams{User: "bob"})
		require.NoError(t, err)

		create, err := json.Marshal(map[string]any{
			"name": "everything", "command": "node", "args": []string{everything, "stdio"},
			"env": map[string]string{"API_KEY": "sekrit-value"}, "tools": map[string]any{"include": []string{"echo"}},
		})
		require.NoError(t, err)
		for name, tc := range map[string]struct {
			token, method, path, body string
			status                    int
			code                      string
		}{
			"anonymous":       {"", "POST", "/api/v2/chats/mcp-servers", string(create), 401, sdk.CodeUnauthorized},
			"not an admin":    {user, "POST", "/api/v2/chats/mcp-servers", string(create), 403, sdk.CodeForbidden},
			"user patch":      {user, "PATCH", "/api/v2/chats/mcp-servers/" + uuid.NewString(), `{}`, 403, sdk.CodeForbidden},
			"user delete":     {user, "DELETE", "/api/v2/chats/mcp-servers/" + uuid.NewString(), "", 403, sdk.CodeForbidden},
			"user test":       {user, "POST", "/api/v2/chats/mcp-servers/" + uuid.NewString() + "/test", "", 403, sdk.CodeForbidden},
			"no transport":    {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x"}`, 400, sdk.CodeValidation},
			"malformed":       {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":`, 400, sdk.CodeValidation},
			"unknown field":   {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","colour":1}`, 400, sdk.CodeValidation},
			"bad id":          {admin, "PATCH", "/api/v2/chats/mcp-servers/nope", `{}`, 404, sdk.CodeNotFound},
			"unknown id":      {admin, "PATCH", "/api/v2/chats/mcp-servers/" + uuid.NewString(), `{}`, 404, sdk.CodeNotFound},
			"delete unknown":  {admin, "DELETE", "/api/v2/chats/mcp-servers/" + uuid.NewString(), "", 404, sdk.CodeNotFound},
			"test unknown":    {admin, "POST", "/api/v2/chats/mcp-servers/" + uuid.NewString() + "/test", "", 404, sdk.CodeNotFound},
			"test bad id":     {admin, "POST", "/api/v2/chats/mcp-servers/x/test", "", 404, sdk.CodeNotFound},
			"no GET by id":    {admin, "GET", "/api/v2/chats/mcp-servers/" + uuid.NewString(), "", 405, sdk.CodeMethodNotAllowed},
			"bad approval":    {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","approval":"maybe"}`, 400, sdk.CodeValidation},
			"relative url":    {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","url":"/mcp"}`, 400, sdk.CodeValidation},
			"headers w/ cmd":  {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","headers":{"a":"b"}}`, 400, sdk.CodeValidation},
			"array body":      {admin, "POST", "/api/v2/chats/mcp-servers", `[]`, 400, sdk.CodeValidation},
			"name with space": {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"a b","command":"c"}`, 400, sdk.CodeValidation},
			"access word":     {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":"everyone"}`, 400, sdk.CodeValidation},
			"access users":    {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":"users"}`, 400, sdk.CodeValidation},
			"access empty":    {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":[]}`, 400, sdk.CodeValidation},
			"access number":   {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":1}`, 400, sdk.CodeValidation},
			"access object":   {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":{"users":["bob"]}}`, 400, sdk.CodeValidation},
			"access bad name": {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":["a b"]}`, 400, sdk.CodeValidation},
			"access nobody":   {admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":["bob","nobody"]}`, 400, sdk.CodeValidation},
			"access patch":    {admin, "PATCH", "/api/v2/chats/mcp-servers/" + uuid.NewString(), `{"access":"all"}`, 404, sdk.CodeNotFound},
		} {
			got := call(t, srv, tc.token, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, got.status, "%s: %s", name, got.body)
			var e sdk.Response
			require.NoError(t, json.Unmarshal(got.body, &e), name)
			require.Equal(t, tc.code, e.Code, name)
			if strings.HasPrefix(name, "access") && tc.status == 400 {
				require.Contains(t, e.Detail, "access", "%s: the answer names the field: %s", name, got.body)
			}
		}
		got := call(t, srv, admin, "POST", "/api/v2/chats/mcp-servers", `{"name":"x","command":"c","access":["bob","nobody"]}`)
		require.Contains(t, string(got.body), `no user is named \"nobody\"`)

		got = call(t, srv, admin, "POST", "/api/v2/chats/mcp-servers", string(create))
		require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
		require.NotContains(t, string(got.body), "sekrit-value")
		// At rest the env value is sealed (AES-GCM under the secret key).
		var rows []store.MCPServer
		require.NoError(t, h.Store.ReadTx(t.Context(), func(tx store.Reader) error {
			var err error
			rows, err = tx.MCPServerList(t.Context())
			return err
		}))
		require.Len(t, rows, 1)
		require.NotEmpty(t, rows[0].Secrets)
		require.NotContains(t, string(rows[0].Secrets), "sekrit-value", "the secret is not in the database in clear")
		require.NotContains(t, string(rows[0].Spec), "sekrit-value")
		var created sdk.MCPServer
		require.NoError(t, json.Unmarshal(got.body, &created))
		require.Equal(t, mcp.ServerID("everything"), created.ID)
		require.Equal(t, []string{"API_KEY"}, created.Config.EnvKeys)
		require.Equal(t, sdk.MCPSourceDatabase, created.Config.Source)
		id := created.ID.String()

		got = call(t, srv, admin, "POST", "/api/v2/chats/mcp-servers", string(create))
		require.Equal(t, http.StatusConflict, got.status, "%s", got.body)
		require.Contains(t, string(got.body), sdk.CodeMCPServerExists)

		got = call(t, srv, admin, "POST", "/api/v2/chats/mcp-servers/"+id+"/test", "")
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		var tested sdk.MCPServerTest
		require.NoError(t, json.Unmarshal(got.body, &tested))
		require.True(t, tested.OK, "%s", got.body)
		require.Equal(t, []string{"everything__echo"}, toolNames(tested.Tools))

		// The new server's tools are offered at once.
		require.Len(t, h.MCP.Tools(t.Context(), anAdmin, nil), 1)

		// Access: a server with env is the admins' by default, so bob does
		// not see it; an admin sees it with its config.
		require.Equal(t, sdk.MCPAccess{Mode: sdk.MCPAccessAdmins}, created.Config.Access)
		require.True(t, created.Config.AccessDefault)
		var list []sdk.MCPServer
		got = call(t, srv, user, "GET", "/api/v2/chats/mcp-servers", "")
		require.Equal(t, http.StatusOK, got.status)
		require.JSONEq(t, `[]`, string(got.body), "bob may not use it")
		got = call(t, srv, admin, "GET", "/api/v2/chats/mcp-servers", "")
		require.NoError(t, json.Unmarshal(got.body, &list))
		require.Len(t, list, 1)
		require.NotNil(t, list[0].Config)
		require.NotContains(t, string(got.body), "sekrit-value")
		require.Contains(t, string(got.body), `"access":"admins","access_default":true`)

		// Let bob in by name: he sees the server (not its config), and the
		// stored access is read back by the manager (a reload from the row).
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"access":["bob","bob"]}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		var patched sdk.MCPServer
		require.NoError(t, json.Unmarshal(got.body, &patched))
		require.Equal(t, sdk.MCPAccess{Mode: sdk.MCPAccessUsers, Users: []string{"bob"}}, patched.Config.Access)
		require.False(t, patched.Config.AccessDefault)
		require.Contains(t, string(got.body), `"access":["bob"],"access_default":false`)
		got = call(t, srv, user, "GET", "/api/v2/chats/mcp-servers", "")
		list = nil
		require.NoError(t, json.Unmarshal(got.body, &list))
		require.Len(t, list, 1)
		require.Nil(t, list[0].Config)
		require.Equal(t, sdk.MCPStateConnected, list[0].State)
		bob := tools.User{Name: "bob"}
		require.Len(t, h.MCP.Tools(t.Context(), bob, nil), 1)
		require.Empty(t, h.MCP.Tools(t.Context(), tools.User{Name: "carol"}, nil))
		require.NoError(t, h.Store.ReadTx(t.Context(), func(tx store.Reader) error {
			row, err := tx.MCPServerGet(t.Context(), created.ID)
			require.NoError(t, err)
			var spec struct{ Access []string }
			require.NoError(t, json.Unmarshal(row.Spec, &spec))
			require.Equal(t, []string{"bob"}, spec.Access, "the access is stored in the spec")
			return nil
		}))
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"access":"all"}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		require.Len(t, h.MCP.Tools(t.Context(), tools.User{Name: "carol"}, nil), 1, "all: every user")
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"access":null}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		require.Contains(t, string(got.body), `"access":"admins","access_default":true`, "null: back to the default")
		require.Empty(t, h.MCP.Tools(t.Context(), bob, nil))
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"access":"everyone"}`)
		require.Equal(t, http.StatusBadRequest, got.status, "%s", got.body)
		require.Contains(t, string(got.body), `access: \"everyone\" is not \"all\", \"admins\", or an array of usernames`)

		// Edit: the next step sees the new tool set.
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"tools":{"exclude":["echo"]}}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		require.NotContains(t, string(got.body), "sekrit-value")
		var names []string
		for _, tool := range h.MCP.Tools(t.Context(), anAdmin, nil) {
			names = append(names, tool.Name())
		}
		require.NotEmpty(t, names)
		require.NotContains(t, names, "everything__echo")

		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"name":"renamed"}`)
		require.Equal(t, http.StatusBadRequest, got.status, "%s", got.body)
		got = call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"enabled":false}`)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		require.Empty(t, h.MCP.Tools(t.Context(), anAdmin, nil), "disabled: no tools")

		got = call(t, srv, admin, "DELETE", "/api/v2/chats/mcp-servers/"+id, "")
		require.Equal(t, http.StatusNoContent, got.status, "%s", got.body)
		got = call(t, srv, admin, "GET", "/api/v2/chats/mcp-servers", "")
		require.JSONEq(t, `[]`, string(got.body))
		require.False(t, slices.ContainsFunc(h.MCP.Status(t.Context(), anAdmin), func(s sdk.MCPServer) bool { return s.ID == created.ID }))
	})
}

// The config file seeds its servers once; a later edit through the API
// survives a restart with the same file, and the file's server cannot be
// deleted while the file names it.
func TestMCPConfigFileSeedsOnce(t *testing.T) {
	t.Parallel()
	path := writeMCPConfig(t, `{"mcpServers": {"off": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer file-secret"}, "disabled": true}}}`)
	h := apptest.Start(t, apptest.Options{NoStart: true, Config: config.Config{MCPConfig: path}})
	admin, srv := h.Token, h.Server
	id := mcp.ServerID("off").String()
	got := call(t, srv, admin, "PATCH", "/api/v2/chats/mcp-servers/"+id, `{"approval":"always","timeout":"5s"}`)
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	require.NotContains(t, string(got.body), "file-secret")
	var s sdk.MCPServer
	require.NoError(t, json.Unmarshal(got.body, &s))
	require.Equal(t, []string{"Authorization"}, s.Config.HeaderKeys)
	require.Equal(t, sdk.MCPSourceConfigFile, s.Config.Source)
	got = call(t, srv, admin, "DELETE", "/api/v2/chats/mcp-servers/"+id, "")
	require.Equal(t, http.StatusConflict, got.status, "%s", got.body)
	require.Contains(t, string(got.body), sdk.CodeMCPServerInConfigFile)
	h.Stop(t)

	srv = h.Reopen(t).Server
	got = call(t, srv, admin, "GET", "/api/v2/chats/mcp-servers", "")
	var list []sdk.MCPServer
	require.NoError(t, json.Unmarshal(got.body, &list))
	require.Len(t, list, 1)
	require.Equal(t, "always", list[0].Config.Approval, "the API edit survived the restart")
	require.Equal(t, "5s", list[0].Config.Timeout)
	require.Equal(t, sdk.MCPStateDisabled, list[0].State)
}
