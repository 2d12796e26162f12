package mcp

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/tools"
)

// catalogManager starts a manager whose servers reach srv in memory.
func catalogManager(t *testing.T, srv *mcp.Server, servers ...Server) *Manager {
	t.Helper()
	m := NewManager(testConfig(servers...), Options{Registerer: prometheus.NewRegistry(), MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	m.dial = func(Server) mcp.Transport {
		client, server := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), server, nil); err != nil {
			t.Errorf("server connect: %v", err)
		}
		return client
	}
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// pagedServer lists five resources, a template and three prompts, two to
// a page.
func pagedServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for i := range 5 {
		uri := fmt.Sprintf("test://doc/%d", i)
		srv.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("doc %d", i), MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "body of " + uri}}}, nil
			})
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}}}, nil
		})
	for _, name := range []string{"a", "b", "greet"} {
		p := &mcp.Prompt{Name: name}
		if name == "greet" {
			p.Arguments = []*mcp.PromptArgument{{Name: "who", Required: true}, {Name: "tone"}}
		}
		srv.AddPrompt(p, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "d", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}},
			}}, nil
		})
	}
	return srv
}

// TestResourcesPageAsTheServerPages: every call is one of the server's
// pages, its cursor passed through; the templates come with the first.
func TestResourcesPageAsTheServerPages(t *testing.T) {
	t.Parallel()
	m := catalogManager(t, pagedServer(), Server{Name: "p"})
	ctx, u, id := t.Context(), tools.User{ID: uuid.New(), Name: "alice"}, ServerID("p")

	var uris []string
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 5, "the pages never end")
		list, err := m.Resources(ctx, u, id, cursor)
		require.NoError(t, err)
		require.LessOrEqual(t, len(list.Resources), 2)
		if page == 0 {
			require.Len(t, list.Templates, 1)
			require.Equal(t, "test://item/{id}", list.Templates[0].URITemplate)
		} else {
			require.Empty(t, list.Templates)
		}
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	require.ElementsMatch(t, []string{"test://doc/0", "test://doc/1", "test://doc/2", "test://doc/3", "test://doc/4"}, uris)

	_, err := m.Resources(ctx, u, id, "not a cursor")
	require.ErrorIs(t, err, ErrInvalidCursor)

	read, err := m.ReadResource(ctx, u, id, "test://doc/3")
	require.NoError(t, err)
	require.Equal(t, "body of test://doc/3", read.Contents[0].Text)
	read, err = m.ReadResource(ctx, u, id, "test://item/9")
	require.NoError(t, err)
	require.Equal(t, []byte{0, 1, 2}, read.Contents[0].Blob)
	require.Equal(t, "application/octet-stream", read.Contents[0].MIMEType)
	_, err = m.ReadResource(ctx, u, id, "test://nothing")
	require.ErrorIs(t, err, ErrItemNotFound)
}

// TestPromptsPageAndRender: prompts page as the server pages them; a
// prompt on a later page renders, its arguments checked first.
func TestPromptsPageAndRender(t *testing.T) {
	t.Parallel()
	m := catalogManager(t, pagedServer(), Server{Name: "p"})
	ctx, u, id := t.Context(), tools.User{ID: uuid.New(), Name: "alice"}, ServerID("p")

	first, err := m.Prompts(ctx, u, id, "")
	require.NoError(t, err)
	require.Len(t, first.Prompts, 2)
	require.NotEmpty(t, first.NextCursor)
	second, err := m.Prompts(ctx, u, id, first.NextCursor)
	require.NoError(t, err)
	require.Len(t, second.Prompts, 1)
	require.Empty(t, second.NextCursor)
	require.Equal(t, "greet", second.Prompts[0].Name, "the server pages in name order")
	require.True(t, second.Prompts[0].Arguments[0].Required)

	got, err := m.GetPrompt(ctx, u, id, "greet", map[string]string{"who": "Ada"})
	require.NoError(t, err)
	require.Equal(t, "hello Ada", got.Messages[0].Content[0].Text)
	_, err = m.GetPrompt(ctx, u, id, "greet", map[string]string{"tone": "warm"})
	require.ErrorIs(t, err, ErrInvalidArguments)
	require.ErrorContains(t, err, "who")
	_, err = m.GetPrompt(ctx, u, id, "greet", map[string]string{"who": "Ada", "mood": "x"})
	require.ErrorIs(t, err, ErrInvalidArguments)
	_, err = m.GetPrompt(ctx, u, id, "missing", nil)
	require.ErrorIs(t, err, ErrItemNotFound)
}

// TestCatalogAccessAndCapabilities: a server the user may not use is
// ErrNotFound (an admin reads it), a disabled one ErrUnavailable, one
// that offers no prompts ErrUnsupported, and a read the server fails
// ErrServerError with its message.
func TestCatalogAccessAndCapabilities(t *testing.T) {
	t.Parallel()
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	bare.AddResource(&mcp.Resource{URI: "test://only", Name: "only"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://only", Text: "x"}}}, nil
		})
	bare.AddResource(&mcp.Resource{URI: "test://broken", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	m := catalogManager(t, bare, Server{Name: "open"}, Server{Name: "vault", Access: AccessAdmins}, Server{Name: "off", Disabled: true})
	ctx := t.Context()
	alice, admin := tools.User{ID: uuid.New(), Name: "alice"}, tools.User{ID: uuid.New(), Name: "root", Admin: true}

	_, err := m.Resources(ctx, alice, ServerID("vault"), "")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = m.ReadResource(ctx, alice, ServerID("vault"), "test://only")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = m.Prompts(ctx, alice, ServerID("vault"), "")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = m.GetPrompt(ctx, alice, ServerID("vault"), "x", nil)
	require.ErrorIs(t, err, ErrNotFound)
	list, err := m.Resources(ctx, admin, ServerID("vault"), "")
	require.NoError(t, err)
	require.Len(t, list.Resources, 2)
	_, err = m.ReadResource(ctx, alice, ServerID("open"), "test://broken")
	require.ErrorIs(t, err, ErrServerError)
	require.ErrorContains(t, err, "disk on fire")

	_, err = m.Resources(ctx, alice, ServerID("off"), "")
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = m.Prompts(ctx, alice, ServerID("open"), "")
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = m.GetPrompt(ctx, alice, ServerID("open"), "x", nil)
	require.ErrorIs(t, err, ErrUnsupported)
}
