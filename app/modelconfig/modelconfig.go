// Package modelconfig owns the LLM providers and model configs chatd runs
// with: their writes (serialized: a Postgres advisory lock, SQLite's one
// writer), the exactly-one-default rule, the sealed API keys, the presets
// from the environment, and the cached view the worker and the API resolve
// models from. These rows are not chat state, so app/chatstate does not
// write them; nothing else does either.
package modelconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ErrNotFound: no provider or model config has that id.
var ErrNotFound = errors.New("modelconfig: not found")

// ErrConflict: the write would duplicate a model of a provider.
var ErrConflict = errors.New("modelconfig: conflict")

// InvalidError is bad input, answered 400 with its field named.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Efforts is the global reasoning effort scale, lowest first.
var Efforts = modelinfo.EffortScale

// APIProviders are the provider types the API creates.
var APIProviders = []string{store.ProviderOpenAI, store.ProviderOpenAICompat, store.ProviderAnthropic}

// Limits of the stored strings.
const (
	maxNameLen = 200
	maxKeyLen  = 4096
	maxURLLen  = 2048
)

// ChangedChannel is the pubsub channel that tells every replica the model
// configuration changed (a hint: caches also expire on their own).
const ChangedChannel = "model_configs:changed"

// Publisher sends the change hint (app/pubsub).
type Publisher interface {
	Publish(ctx context.Context, channel string, payload []byte) error
}

// Service is the one writer of providers and model configs.
type Service struct {
	store  store.Store
	cipher *Cipher
	clock  clock.Clock
	pub    Publisher
	cache  *cache
}

// Options configure a Service.
type Options struct {
	// Cipher seals API keys (required).
	Cipher *Cipher
	Clock  clock.Clock
	// Publisher, when set, carries the change hint to other replicas.
	Publisher Publisher
	// Factory builds the LLM clients of providers (required for Resolve).
	Factory Factory
	// CacheTTL bounds how long a replica serves a cached configuration it
	// got no change hint for (DefaultCacheTTL when zero).
	CacheTTL time.Duration
}

// New returns the service over s.
func New(s store.Store, o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	svc := &Service{store: s, cipher: o.Cipher, clock: o.Clock, pub: o.Publisher}
	svc.cache = newCache(svc, o.Factory, o.CacheTTL)
	return svc
}

// write runs fn under the model configuration write lock, then drops the
// cache and tells the other replicas.
func (s *Service) write(ctx context.Context, fn func(tx store.Tx) error) error {
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.ModelConfigWriteLock(ctx); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		return translate(err)
	}
	s.cache.invalidate()
	if s.pub != nil {
		_ = s.pub.Publish(ctx, ChangedChannel, nil) // a hint; the TTL covers a lost one
	}
	return nil
}

func translate(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// --- providers ---

// ProviderView is the wire shape of a provider row: never the key.
func ProviderView(p store.AIProvider) sdk.ChatProviderConfig {
	return sdk.ChatProviderConfig{ID: p.ID, Provider: p.Provider, DisplayName: p.DisplayName, Enabled: p.Enabled,
		HasAPIKey: len(p.APIKeyCipher) > 0, BaseURL: p.BaseURL, Source: p.Source, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// Providers lists the provider configs.
func (s *Service) Providers(ctx context.Context) ([]sdk.ChatProviderConfig, error) {
	var out []sdk.ChatProviderConfig
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		ps, err := tx.AIProviderList(ctx)
		out = make([]sdk.ChatProviderConfig, 0, len(ps))
		for _, p := range ps {
			out = append(out, ProviderView(p))
		}
		return err
	})
	return out, err
}

func checkBaseURL(provider, raw string) error {
	if raw == "" {
		if provider == store.ProviderOpenAICompat {
			return invalid("base_url", "an openai-compat provider needs one (e.g. http://localhost:11434/v1)")
		}
		return nil
	}
	if len(raw) > maxURLLen {
		return invalid("base_url", "longer than %d bytes", maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("base_url", "want an absolute http or https URL, got %q", raw)
	}
	if u.User != nil {
		return invalid("base_url", "must not carry credentials; set api_key")
	}
	return nil
}

func checkName(field, v string) error {
	if len(v) > maxNameLen {
		return invalid(field, "longer than %d bytes", maxNameLen)
	}
	return nil
}

func checkKey(k string) error {
	if len(k) > maxKeyLen {
		return invalid("api_key", "longer than %d bytes", maxKeyLen)
	}
	if strings.ContainsAny(k, "\r\n") {
		return invalid("api_key", "must be one line")
	}
	return nil
}

// CreateProvider stores a provider config from the API.
func (s *Service) CreateProvider(ctx context.Context, req sdk.CreateChatProviderConfigRequest) (sdk.ChatProviderConfig, error) {
	if !slices.Contains(APIProviders, req.Provider) {
		return sdk.ChatProviderConfig{}, invalid("provider", "%q is not one of %s", req.Provider, strings.Join(APIProviders, ", "))
	}
	if err := errors.Join(checkBaseURL(req.Provider, req.BaseURL), checkName("display_name", req.DisplayName), checkKey(req.APIKey)); err != nil {
		return sdk.ChatProviderConfig{}, err
	}
	now := s.clock.Now()
	p := store.AIProvider{ID: uuid.New(), Provider: req.Provider, DisplayName: req.DisplayName, BaseURL: req.BaseURL,
		Enabled: req.Enabled == nil || *req.Enabled, Source: store.SourceDatabase, CreatedAt: now, UpdatedAt: now}
	if p.DisplayName == "" {
		p.DisplayName = req.Provider
	}
	if req.APIKey != "" {
		p.APIKeyCipher = s.cipher.Seal(req.APIKey)
	}
	err := s.write(ctx, func(tx store.Tx) error {
		var err error
		p, err = tx.AIProviderInsert(ctx, p)
		return err
	})
	return ProviderView(p), err
}

// UpdateProvider changes a provider config; disabling the default model's
// provider elects another default.
func (s *Service) UpdateProvider(ctx context.Context, id uuid.UUID, req sdk.UpdateChatProviderConfigRequest) (sdk.ChatProviderConfig, error) {
	if err := checkName("display_name", req.DisplayName); err != nil {
		return sdk.ChatProviderConfig{}, err
	}
	if req.APIKey != nil {
		if err := checkKey(*req.APIKey); err != nil {
			return sdk.ChatProviderConfig{}, err
		}
	}
	var p store.AIProvider
	err := s.write(ctx, func(tx store.Tx) error {
		var err error
		if p, err = tx.AIProviderGet(ctx, id); err != nil {
			return err
		}
		if p.Provider == store.ProviderDemo && (req.BaseURL != nil || req.APIKey != nil) {
			return invalid("provider", "the built-in demo provider has no base_url or api_key")
		}
		if req.DisplayName != "" {
			p.DisplayName = req.DisplayName
		}
		if req.BaseURL != nil {
			if err := checkBaseURL(p.Provider, *req.BaseURL); err != nil {
				return err
			}
			p.BaseURL = *req.BaseURL
		}
		if req.APIKey != nil {
			p.APIKeyCipher = nil
			if *req.APIKey != "" {
				p.APIKeyCipher = s.cipher.Seal(*req.APIKey)
			}
		}
		wasEnabled := p.Enabled
		if req.Enabled != nil {
			p.Enabled = *req.Enabled
		}
		p.UpdatedAt = s.clock.Now()
		if p, err = tx.AIProviderUpdate(ctx, p); err != nil {
			return err
		}
		if wasEnabled && !p.Enabled {
			return s.reelect(ctx, tx, func(m store.ModelConfig) bool { return m.AIProviderID == id })
		}
		return nil
	})
	return ProviderView(p), err
}

// DeleteProvider removes a provider config and its model configs.
func (s *Service) DeleteProvider(ctx context.Context, id uuid.UUID) error {
	return s.write(ctx, func(tx store.Tx) error {
		n, err := tx.AIProviderDelete(ctx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("delete provider %s: %w", id, store.ErrNotFound)
		}
		return s.reelect(ctx, tx, func(store.ModelConfig) bool { return false })
	})
}

// --- model configs ---

// callConfig is what the options column holds.
type callConfig = sdk.ChatModelCallConfig

func decodeOptions(raw json.RawMessage) *callConfig {
	var c callConfig
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil || c == (callConfig{}) {
		return nil
	}
	return &c
}

// effortIndex is e's position on the scale (-1: not on it).
func effortIndex(e string) int { return slices.Index(Efforts, e) }

func checkCallConfig(c *callConfig) error {
	if c == nil {
		return nil
	}
	if c.MaxOutputTokens != nil && *c.MaxOutputTokens <= 0 {
		return invalid("model_config.max_output_tokens", "must be positive")
	}
	if p := c.Price; p != nil && (!(p.InputPerMillion >= 0) || !(p.OutputPerMillion >= 0)) {
		return invalid("model_config.price", "input_per_million and output_per_million must not be negative")
	}
	if r := c.ReasoningEffort; r != nil {
		if effortIndex(r.Max) < 0 {
			return invalid("model_config.reasoning_effort.max", "%q is not one of %s", r.Max, strings.Join(Efforts, ", "))
		}
		if r.Default != "" {
			if effortIndex(r.Default) < 0 {
				return invalid("model_config.reasoning_effort.default", "%q is not one of %s", r.Default, strings.Join(Efforts, ", "))
			}
			if effortIndex(r.Default) > effortIndex(r.Max) {
				return invalid("model_config.reasoning_effort.default", "%q is above max %q", r.Default, r.Max)
			}
		}
	}
	return nil
}

// ReasoningEfforts are the efforts a config allows (none without a
// reasoning_effort config).
func ReasoningEfforts(c *callConfig) []string {
	if c == nil || c.ReasoningEffort == nil {
		return []string{}
	}
	return slices.Clone(Efforts[:effortIndex(c.ReasoningEffort.Max)+1])
}

// ModelView is the wire shape of a model config.
func ModelView(m store.ModelConfig, p store.AIProvider) sdk.ChatModelConfig {
	c := decodeOptions(m.Options)
	return sdk.ChatModelConfig{ID: m.ID, Provider: p.Provider, Model: m.Model, DisplayName: m.DisplayName,
		Enabled: m.Enabled, IsDefault: m.IsDefault, ContextLimit: m.ContextLimit, AIProviderID: m.AIProviderID,
		CompressionThreshold: int32(m.CompressionThreshold), ModelConfig: c, ReasoningEfforts: ReasoningEfforts(c),
		Source: m.Source, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// ModelConfigs lists the model configs; with enabledOnly, only the enabled
// configs of enabled providers (what non-admins see).
func (s *Service) ModelConfigs(ctx context.Context, enabledOnly bool) ([]sdk.ChatModelConfig, error) {
	var out []sdk.ChatModelConfig
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		ps, ms, err := readAll(ctx, tx)
		out = make([]sdk.ChatModelConfig, 0, len(ms))
		for _, m := range ms {
			p := ps[m.AIProviderID]
			if enabledOnly && !(m.Enabled && p.Enabled) {
				continue
			}
			out = append(out, ModelView(m, p))
		}
		return err
	})
	return out, err
}

func readAll(ctx context.Context, tx store.Reader) (map[uuid.UUID]store.AIProvider, []store.ModelConfig, error) {
	ps, err := tx.AIProviderList(ctx)
	if err != nil {
		return nil, nil, err
	}
	ms, err := tx.ModelConfigList(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[uuid.UUID]store.AIProvider, len(ps))
	for _, p := range ps {
		byID[p.ID] = p
	}
	return byID, ms, nil
}

func checkModelFields(model, display string, limit *int64, threshold *int32, c *callConfig) error {
	errs := []error{checkName("model", model), checkName("display_name", display), checkCallConfig(c)}
	if limit != nil && *limit < 0 {
		errs = append(errs, invalid("context_limit", "must not be negative"))
	}
	if threshold != nil && (*threshold < 0 || *threshold > 100) {
		errs = append(errs, invalid("compression_threshold", "want a percent, 0 to 100"))
	}
	return errors.Join(errs...)
}

func encodeOptions(c *callConfig) json.RawMessage {
	if c == nil {
		return json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(c) // plain struct: never fails
	return b
}

// CreateModelConfig stores a model config. The first one, or one asked to
// be the default, becomes the default in the same write.
func (s *Service) CreateModelConfig(ctx context.Context, req sdk.CreateChatModelConfigRequest) (sdk.ChatModelConfig, error) {
	if strings.TrimSpace(req.Model) == "" {
		return sdk.ChatModelConfig{}, invalid("model", "required")
	}
	if err := checkModelFields(req.Model, req.DisplayName, req.ContextLimit, req.CompressionThreshold, req.ModelConfig); err != nil {
		return sdk.ChatModelConfig{}, err
	}
	now := s.clock.Now()
	m := store.ModelConfig{ID: uuid.New(), Model: req.Model, DisplayName: req.DisplayName,
		Enabled: req.Enabled == nil || *req.Enabled, Options: encodeOptions(req.ModelConfig),
		Source: store.SourceDatabase, CreatedAt: now, UpdatedAt: now}
	if m.DisplayName == "" {
		m.DisplayName = req.Model
	}
	if req.ContextLimit != nil {
		m.ContextLimit = *req.ContextLimit
	}
	if req.CompressionThreshold != nil {
		m.CompressionThreshold = int64(*req.CompressionThreshold)
	}
	var p store.AIProvider
	err := s.write(ctx, func(tx store.Tx) error {
		var err error
		if p, err = pickProvider(ctx, tx, req.AIProviderID, req.Provider); err != nil {
			return err
		}
		m.AIProviderID = p.ID
		m, err = s.insertModel(ctx, tx, m, req.IsDefault != nil && *req.IsDefault)
		return err
	})
	return ModelView(m, p), err
}

func pickProvider(ctx context.Context, tx store.Tx, id *uuid.UUID, provider string) (store.AIProvider, error) {
	if id != nil {
		p, err := tx.AIProviderGet(ctx, *id)
		if errors.Is(err, store.ErrNotFound) {
			return p, invalid("ai_provider_id", "no provider config %s", *id)
		}
		return p, err
	}
	if provider == "" {
		return store.AIProvider{}, invalid("ai_provider_id", "required (or provider, when one provider config has that type)")
	}
	ps, err := tx.AIProviderList(ctx)
	if err != nil {
		return store.AIProvider{}, err
	}
	var found []store.AIProvider
	for _, p := range ps {
		if p.Provider == provider {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return store.AIProvider{}, invalid("provider", "no provider config of type %q", provider)
	case 1:
		return found[0], nil
	}
	return store.AIProvider{}, invalid("provider", "%d provider configs have type %q: set ai_provider_id", len(found), provider)
}

// insertModel stores m, making it the default when asked to or when no
// other config exists (the old default is unset first).
func (s *Service) insertModel(ctx context.Context, tx store.Tx, m store.ModelConfig, makeDefault bool) (store.ModelConfig, error) {
	all, err := tx.ModelConfigList(ctx)
	if err != nil {
		return m, err
	}
	m.IsDefault = makeDefault || len(all) == 0
	if m.IsDefault {
		if err := unsetDefault(ctx, tx, all, m.UpdatedAt); err != nil {
			return m, err
		}
	}
	return tx.ModelConfigInsert(ctx, m)
}

func unsetDefault(ctx context.Context, tx store.Tx, all []store.ModelConfig, now time.Time) error {
	for _, o := range all {
		if o.IsDefault {
			o.IsDefault, o.UpdatedAt = false, now
			if _, err := tx.ModelConfigUpdate(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// UpdateModelConfig changes a model config. Promoting it unsets the old
// default in the same write; demoting or disabling the default elects
// another (it stays the default when it is the only config).
func (s *Service) UpdateModelConfig(ctx context.Context, id uuid.UUID, req sdk.UpdateChatModelConfigRequest) (sdk.ChatModelConfig, error) {
	if err := checkModelFields(req.Model, req.DisplayName, req.ContextLimit, req.CompressionThreshold, req.ModelConfig); err != nil {
		return sdk.ChatModelConfig{}, err
	}
	var (
		m store.ModelConfig
		p store.AIProvider
	)
	err := s.write(ctx, func(tx store.Tx) error {
		var err error
		if m, err = tx.ModelConfigGet(ctx, id); err != nil {
			return err
		}
		if p, err = tx.AIProviderGet(ctx, m.AIProviderID); err != nil {
			return err
		}
		now := s.clock.Now()
		if req.Model != "" {
			m.Model = req.Model
		}
		if req.DisplayName != "" {
			m.DisplayName = req.DisplayName
		}
		if req.Enabled != nil {
			m.Enabled = *req.Enabled
		}
		if req.ContextLimit != nil {
			m.ContextLimit = *req.ContextLimit
		}
		if req.CompressionThreshold != nil {
			m.CompressionThreshold = int64(*req.CompressionThreshold)
		}
		if req.ModelConfig != nil {
			m.Options = encodeOptions(req.ModelConfig)
		}
		m.UpdatedAt = now
		promote := req.IsDefault != nil && *req.IsDefault && !m.IsDefault
		leave := m.IsDefault && ((req.IsDefault != nil && !*req.IsDefault) || !m.Enabled)
		if promote {
			all, err := tx.ModelConfigList(ctx)
			if err != nil {
				return err
			}
			if err := unsetDefault(ctx, tx, all, now); err != nil {
				return err
			}
			m.IsDefault = true
		}
		if m, err = tx.ModelConfigUpdate(ctx, m); err != nil {
			return err
		}
		if leave {
			if err := s.reelect(ctx, tx, func(o store.ModelConfig) bool { return o.ID == id }); err != nil {
				return err
			}
			m, err = tx.ModelConfigGet(ctx, id)
		}
		return err
	})
	return ModelView(m, p), err
}

// DeleteModelConfig removes a model config; deleting the default elects
// another.
func (s *Service) DeleteModelConfig(ctx context.Context, id uuid.UUID) error {
	return s.write(ctx, func(tx store.Tx) error {
		n, err := tx.ModelConfigDelete(ctx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("delete model config %s: %w", id, store.ErrNotFound)
		}
		return s.reelect(ctx, tx, func(store.ModelConfig) bool { return false })
	})
}

// reelect keeps exactly one default: when there is none, or the default is
// one the write took away (leaving reports it), it elects the first
// enabled config of an enabled provider, else the first other config,
// else keeps the one there is.
func (s *Service) reelect(ctx context.Context, tx store.Tx, leaving func(store.ModelConfig) bool) error {
	ps, all, err := readAll(ctx, tx)
	if err != nil || len(all) == 0 {
		return err
	}
	cur := slices.IndexFunc(all, func(m store.ModelConfig) bool { return m.IsDefault })
	if cur >= 0 && !leaving(all[cur]) {
		return nil
	}
	usable := func(m store.ModelConfig) bool { return m.Enabled && ps[m.AIProviderID].Enabled && !leaving(m) }
	next := slices.IndexFunc(all, usable)
	if next < 0 {
		next = slices.IndexFunc(all, func(m store.ModelConfig) bool { return !leaving(m) })
	}
	if next < 0 || next == cur {
		if cur >= 0 {
			return nil // the only config stays the default
		}
		next = 0
	}
	now := s.clock.Now()
	if cur >= 0 {
		old := all[cur]
		old.IsDefault, old.UpdatedAt = false, now
		if _, err := tx.ModelConfigUpdate(ctx, old); err != nil {
			return err
		}
	}
	m := all[next]
	m.IsDefault, m.UpdatedAt = true, now
	_, err = tx.ModelConfigUpdate(ctx, m)
	return err
}
