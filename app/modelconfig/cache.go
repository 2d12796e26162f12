package modelconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// DefaultCacheTTL is how long a replica trusts its cached configuration
// without a change hint: a write on another replica whose hint is lost is
// seen at most this late.
const DefaultCacheTTL = 30 * time.Second

// resolveTimeout bounds the database read of a Resolve or List whose
// caller has no context.
const resolveTimeout = 10 * time.Second

// ErrNoDefault: a chat's model is unusable and there is no enabled default
// to fall back to.
var ErrNoDefault = errors.New("modelconfig: no enabled default model config")

// Factory builds the LLM client of a provider for one model config.
// useResponsesAPI is the config's openai_config.use_responses_api (nil:
// the known-model list decides).
type Factory func(p store.AIProvider, apiKey string, useResponsesAPI *bool) (llm.Provider, error)

// Model is a resolved model config: its client and the settings a call
// needs.
type Model struct {
	Config       store.ModelConfig
	Provider     store.AIProvider
	Client       llm.Provider
	ContextLimit int64
	// MaxOutputTokens is model_config.max_output_tokens (0: provider default).
	MaxOutputTokens int
	call            *callConfig
}

// Price is the config's model_config.price (nil: none).
func (m Model) Price() *sdk.ModelPrice {
	if m.call == nil {
		return nil
	}
	return m.call.Price
}

// ReasoningEffort is the effort to send for a requested one ("" = none
// requested): the config's default when none is requested, clamped to its
// max, and "" (not sent) when the config has no reasoning_effort, or the
// requested value is not on the scale.
func (m Model) ReasoningEffort(requested string) string {
	if m.call == nil || m.call.ReasoningEffort == nil {
		return ""
	}
	r := m.call.ReasoningEffort
	e := requested
	if e == "" {
		e = r.Default
	}
	i := effortIndex(e)
	if i < 0 {
		return ""
	}
	return Efforts[min(i, effortIndex(r.Max))]
}

type snapshot struct {
	providers map[uuid.UUID]store.AIProvider
	models    []store.ModelConfig
}

type client struct {
	providerAt, modelAt time.Time
	llm                 llm.Provider
}

type cache struct {
	svc     *Service
	factory Factory
	ttl     time.Duration

	mu       sync.Mutex
	snap     *snapshot
	loadedAt time.Time
	clients  map[uuid.UUID]client // by model config id
}

func newCache(s *Service, f Factory, ttl time.Duration) *cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &cache{svc: s, factory: f, ttl: ttl, clients: map[uuid.UUID]client{}}
}

func (c *cache) invalidate() {
	c.mu.Lock()
	c.snap = nil
	c.mu.Unlock()
}

// Invalidate drops the cached configuration (the change hint of another
// replica); the next read loads it again.
func (s *Service) Invalidate() { s.cache.invalidate() }

func (c *cache) get(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.svc.clock.Now()
	if c.snap != nil && now.Sub(c.loadedAt) < c.ttl {
		return c.snap, nil
	}
	var snap snapshot
	err := c.svc.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		snap.providers, snap.models, err = readAll(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read model configs: %w", err)
	}
	c.snap, c.loadedAt = &snap, now
	return c.snap, nil
}

// client returns m's LLM client, built again only when m or its provider
// changed, so a running chat keeps its client across unrelated edits.
func (c *cache) client(m store.ModelConfig, p store.AIProvider) (llm.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[m.ID]; ok && cl.providerAt.Equal(p.UpdatedAt) && cl.modelAt.Equal(m.UpdatedAt) {
		return cl.llm, nil
	}
	if c.factory == nil {
		return nil, errors.New("modelconfig: no client factory")
	}
	key := ""
	if len(p.APIKeyCipher) > 0 {
		var err error
		if key, _, err = c.svc.cipher.Open(p.APIKeyCipher); err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.DisplayName, err)
		}
	}
	var useResponses *bool
	if call := decodeOptions(m.Options); call != nil && call.OpenAIConfig != nil {
		useResponses = call.OpenAIConfig.UseResponsesAPI
	}
	l, err := c.factory(p, key, useResponses)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", p.DisplayName, err)
	}
	c.clients[m.ID] = client{providerAt: p.UpdatedAt, modelAt: m.UpdatedAt, llm: l}
	return l, nil
}

func usable(s *snapshot, m store.ModelConfig) bool {
	return m.Enabled && s.providers[m.AIProviderID].Enabled
}

// Resolve finds the model to run for a chat's model config id (unset: the
// default). A config that was deleted or disabled, or whose provider was,
// falls back to the enabled default; ErrNoDefault when there is none.
func (s *Service) Resolve(ctx context.Context, id uuid.NullUUID) (Model, error) {
	snap, err := s.cache.get(ctx)
	if err != nil {
		return Model{}, err
	}
	i := -1
	if id.Valid {
		i = slices.IndexFunc(snap.models, func(m store.ModelConfig) bool { return m.ID == id.UUID && usable(snap, m) })
	}
	if i < 0 {
		i = slices.IndexFunc(snap.models, func(m store.ModelConfig) bool { return m.IsDefault && usable(snap, m) })
	}
	if i < 0 {
		return Model{}, ErrNoDefault
	}
	return s.model(snap.models[i], snap.providers[snap.models[i].AIProviderID])
}

// ModelAccess resolves model config id itself, for an admin's test of it:
// no fallback, and a disabled config (or one of a disabled provider) too.
// ErrNotFound when no config has the id.
func (s *Service) ModelAccess(ctx context.Context, id uuid.UUID) (Model, error) {
	snap, err := s.cache.get(ctx)
	if err != nil {
		return Model{}, err
	}
	i := slices.IndexFunc(snap.models, func(m store.ModelConfig) bool { return m.ID == id })
	if i < 0 {
		return Model{}, fmt.Errorf("model config %s: %w", id, ErrNotFound)
	}
	return s.model(snap.models[i], snap.providers[snap.models[i].AIProviderID])
}

// model is m of provider p with its client and call settings.
func (s *Service) model(m store.ModelConfig, p store.AIProvider) (Model, error) {
	cl, err := s.cache.client(m, p)
	if err != nil {
		return Model{}, err
	}
	out := Model{Config: m, Provider: p, Client: cl, ContextLimit: m.ContextLimit, call: decodeOptions(m.Options)}
	if out.ContextLimit == 0 {
		out.ContextLimit, _ = ContextLimit(p.Provider, m.Model)
	}
	if out.call != nil && out.call.MaxOutputTokens != nil {
		out.MaxOutputTokens = int(*out.call.MaxOutputTokens)
	}
	return out, nil
}

// Enabled lists the enabled model configs of enabled providers, the
// default first, in the shape of GET /chats/models.
func (s *Service) Enabled(ctx context.Context) ([]sdk.ChatModel, error) {
	snap, err := s.cache.get(ctx)
	if err != nil {
		return nil, err
	}
	out := []sdk.ChatModel{}
	for _, m := range snap.models {
		if !usable(snap, m) {
			continue
		}
		p := snap.providers[m.AIProviderID]
		limit := m.ContextLimit
		if limit == 0 {
			limit, _ = ContextLimit(p.Provider, m.Model)
		}
		cm := sdk.ChatModel{ID: m.ID, Provider: p.Provider, Model: m.Model, DisplayName: m.DisplayName,
			Default: m.IsDefault, IsDefault: m.IsDefault, Enabled: true, ContextLimit: limit,
			ImageInput: files.TakesImages(p.Provider, m.Model), PDFInput: files.TakesPDF(p.Provider, m.Model)}
		if m.IsDefault {
			out = slices.Insert(out, 0, cm)
		} else {
			out = append(out, cm)
		}
	}
	return out, nil
}

// List implements the API's model list (no context: it bounds its own read).
func (s *Service) List() []sdk.ChatModel {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	out, err := s.Enabled(ctx)
	if err != nil {
		return []sdk.ChatModel{}
	}
	return out
}

// ContextLimit is a well-known model's context window in tokens
// (app/llm/modelinfo); the demo provider's models are not in it.
func ContextLimit(provider, model string) (int64, bool) {
	if provider == store.ProviderDemo {
		return 0, false
	}
	return modelinfo.ContextLimit(provider, model)
}
