package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
)

// openMCP builds the MCP servers: the manager, and the stored servers it
// follows, seeded from CHATD_MCP_CONFIG (a bad file stops startup) and
// loaded once before anything asks for tools.
func (a *App) openMCP(ctx context.Context) error {
	var file mcp.Config
	if a.cfg.MCPConfig != "" {
		var err error
		if file, err = mcp.LoadConfig(a.cfg.MCPConfig); err != nil {
			return fmt.Errorf("load the MCP servers: %w", err)
		}
	}
	// Nothing connects before the first chat or status asks.
	a.elicit = elicit.New(a.machine, a.store, a.pubsub, a.clock, a.log, elicit.Config{Timeout: a.cfg.MCPElicitationTimeout})
	a.mcp = mcp.NewManager(mcp.Config{}, mcp.Options{
		Log: a.log, Registerer: a.metrics.Registry, Clock: a.clock, Secrets: a.secrets, Elicitor: mcpElicitor{a.elicit},
		// The authorization servers send the admin's browser back here.
		OAuthRedirectURL: func() string {
			if a.cfg.AdvertiseURL == "" {
				return ""
			}
			return strings.TrimRight(a.cfg.AdvertiseURL, "/") + api.MCPOAuthCallbackPath
		},
	})
	a.mcpServers = mcp.NewServers(a.mcp, mcp.ServersOptions{
		Store: a.store, Pubsub: a.pubsub, Clock: a.clock, Log: a.log, File: file,
		ResyncInterval: a.cfg.MCPResyncInterval,
		// Env and header values are sealed with the providers' key.
		Sealer: mcpSealer{a.cipher},
	})
	if err := a.mcpServers.Seed(ctx); err != nil {
		return fmt.Errorf("seed the MCP servers from %s: %w", a.cfg.MCPConfig, err)
	}
	if err := a.mcpServers.Reload(ctx); err != nil {
		return fmt.Errorf("load the MCP servers: %w", err)
	}
	return nil
}

// mcpSealer seals MCP servers' env and header values like provider API
// keys (AES-GCM under CHATD_SECRET_KEY, modelconfig.Cipher). Rows written
// before encryption existed ("plain:"-marked) still open, and are sealed
// at their next write.
type mcpSealer struct{ c *modelconfig.Cipher }

func (s mcpSealer) Seal(plain []byte) ([]byte, error) { return s.c.Seal(string(plain)), nil }

func (s mcpSealer) Open(sealed []byte) ([]byte, error) {
	if plain, err := (mcp.PlainSealer{}).Open(sealed); err == nil {
		return plain, nil
	}
	plain, _, err := s.c.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("open MCP server secrets (is CHATD_SECRET_KEY the one they were sealed with?): %w", err)
	}
	return []byte(plain), nil
}

// mcpAdmin is mcp.Servers as the API sees it, its errors translated.
type mcpAdmin struct{ s *mcp.Servers }

var _ api.MCPAdmin = mcpAdmin{}

func (m mcpAdmin) Create(ctx context.Context, body []byte) (sdk.MCPServer, error) {
	out, err := m.s.Create(ctx, body)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Update(ctx context.Context, id uuid.UUID, body []byte) (sdk.MCPServer, error) {
	out, err := m.s.Update(ctx, id, body)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Delete(ctx context.Context, id uuid.UUID) error {
	return mcpAPIError(m.s.Delete(ctx, id))
}

func (m mcpAdmin) Test(ctx context.Context, id uuid.UUID) (sdk.MCPServerTest, error) {
	out, err := m.s.Test(ctx, id)
	return out, mcpAPIError(err)
}

func (m mcpAdmin) Configs(ctx context.Context) (map[uuid.UUID]sdk.MCPServerConfig, error) {
	return m.s.Configs(ctx)
}

// mcpAPIError maps app/mcp's admin errors to the API's kinds.
func mcpAPIError(err error) error {
	for _, k := range []struct{ mcp, api error }{
		{mcp.ErrInvalid, api.ErrMCPServerInvalid},
		{mcp.ErrNotFound, api.ErrMCPServerNotFound},
		{mcp.ErrNameTaken, api.ErrMCPServerExists},
		{mcp.ErrInConfigFile, api.ErrMCPServerInConfigFile},
	} {
		if errors.Is(err, k.mcp) {
			return &api.MCPAdminError{Kind: k.api, Detail: err.Error()}
		}
	}
	return err
}
