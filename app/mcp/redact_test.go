package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
)

// A server that quotes a configured header value in its errors (a tool's
// isError result, a tool handler's error, a gateway's refusal of the
// connection) never gets that value back to chatd's callers: tool errors,
// the server's last error and a connection test show it masked.
func TestErrorsMaskConfiguredSecrets(t *testing.T) {
	t.Parallel()
	const secret = "mcp-header-secret-31415926"
	srv := mcp.NewServer(&mcp.Implementation{Name: "quoter", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
				&mcp.TextContent{Text: "refused: X-Api-Key " + req.Extra.Header.Get("X-Api-Key")}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("backend says key %s expired", req.Extra.Header.Get("X-Api-Key"))
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	// A gateway that refuses with a JSON-RPC error quoting the headers.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1,
			"error": map[string]any{"code": -32001, "message": "unauthorized, X-Api-Key: " + r.Header.Get("X-Api-Key")}})
	}))
	t.Cleanup(gw.Close)

	secrets := redact.New()
	headers := map[string]string{"X-Api-Key": secret}
	good := Server{ID: ServerID("h"), Name: "h", URL: hs.URL, Headers: headers, Timeout: DefaultTimeout}
	refused := Server{ID: ServerID("gw"), Name: "gw", URL: gw.URL, Headers: headers, Timeout: DefaultTimeout}
	m := NewManager(Config{Servers: []Server{good, refused}}, Options{Secrets: secrets, MinBackoff: DefaultMaxBackoff})
	t.Cleanup(func() { require.NoError(t, m.Close()) })

	list := m.Tools(t.Context(), anAdmin, nil) // the servers have headers: admins only
	_, err := find(t, list, "h__whoami").Run(t.Context(), nil)
	var te *ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "refused: X-Api-Key [secret]", te.Error(), "the server quoted the header; chatd masked it")
	require.NotContains(t, string(te.Result), secret)
	require.Contains(t, string(te.Result), "[secret]")

	_, err = find(t, list, "h__fail").Run(t.Context(), nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
	require.Contains(t, err.Error(), "backend says key [secret] expired")

	var st sdk.MCPServer
	for _, s := range m.Status(t.Context(), anAdmin) {
		if s.Name == "gw" {
			st = s
		}
	}
	require.Equal(t, sdk.MCPStateFailed, st.State)
	require.NotNil(t, st.LastError)
	require.Contains(t, *st.LastError, "unauthorized, X-Api-Key: [secret]")

	test := m.Test(t.Context(), refused)
	require.False(t, test.OK)
	require.NotNil(t, test.Error)
	require.Contains(t, *test.Error, "unauthorized, X-Api-Key: [secret]")

	// errors.Is still sees the cause of a masked error.
	masked := &maskedError{msg: "x", err: context.Canceled}
	require.True(t, errors.Is(masked, context.Canceled))
}

// A stdio server's stderr is logged with the secrets masked (a server may
// print its own env).
func TestStderrMasked(t *testing.T) {
	t.Parallel()
	const secret = "mcp-env-secret-16180339"
	secrets := redact.New()
	secrets.Set("mcp:x", redact.LabelSecret, secret)
	var buf bytes.Buffer
	l := &lineLog{log: slog.New(slog.NewTextHandler(&buf, nil)), server: "x", secrets: secrets}
	_, err := l.Write([]byte("starting with TOKEN=" + secret + "\n"))
	require.NoError(t, err)
	require.NotContains(t, buf.String(), secret)
	require.Contains(t, buf.String(), "TOKEN=[secret]")
}
