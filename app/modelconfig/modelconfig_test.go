package modelconfig_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type fixture struct {
	ctx   context.Context
	store store.Store
	clock *clock.Fake
	svc   *modelconfig.Service
	built map[string]int // factory calls per provider display name
	keys  []string       // the API keys the factory got
	mu    sync.Mutex
}

func setup(t *testing.T, newStore func(t testing.TB) store.Store) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), store: newStore(t), clock: clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)), built: map[string]int{}}
	c, err := modelconfig.NewCipher("test key", "")
	require.NoError(t, err)
	f.svc = modelconfig.New(f.store, modelconfig.Options{Cipher: c, Clock: f.clock, Factory: f.factory})
	return f
}

func (f *fixture) factory(p store.AIProvider, key string, _ *bool) (llm.Provider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.built[p.DisplayName]++
	f.keys = append(f.keys, key)
	return demo.New(demo.Config{}), nil
}

func ptr[T any](v T) *T { return &v }

func (f *fixture) provider(t *testing.T, name string) sdk.ChatProviderConfig {
	t.Helper()
	p, err := f.svc.CreateProvider(f.ctx, sdk.CreateChatProviderConfigRequest{Provider: "openai", DisplayName: name, APIKey: "sk-" + name})
	require.NoError(t, err)
	return p
}

func (f *fixture) model(t *testing.T, p sdk.ChatProviderConfig, name string, def bool) sdk.ChatModelConfig {
	t.Helper()
	f.clock.Advance(time.Second) // distinct created_at: lists are oldest first
	m, err := f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{AIProviderID: &p.ID, Model: name, IsDefault: ptr(def)})
	require.NoError(t, err)
	return m
}

// defaults lists the model names that are the default.
func (f *fixture) defaults(t *testing.T) []string {
	t.Helper()
	ms, err := f.svc.ModelConfigs(f.ctx, false)
	require.NoError(t, err)
	out := []string{}
	for _, m := range ms {
		if m.IsDefault {
			out = append(out, m.Model)
		}
	}
	return out
}

func TestDefaultElection(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		p := f.provider(t, "a")
		a := f.model(t, p, "a", false)
		require.True(t, a.IsDefault, "the first config self-promotes")
		b := f.model(t, p, "b", false)
		require.False(t, b.IsDefault)
		require.Equal(t, []string{"a"}, f.defaults(t))
		c := f.model(t, p, "c", true)
		require.True(t, c.IsDefault)
		require.Equal(t, []string{"c"}, f.defaults(t), "a new default unsets the old one in the same write")

		_, err := f.svc.UpdateModelConfig(f.ctx, c.ID, sdk.UpdateChatModelConfigRequest{IsDefault: ptr(false)})
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, f.defaults(t), "demoting elects the first enabled config")

		_, err = f.svc.UpdateModelConfig(f.ctx, b.ID, sdk.UpdateChatModelConfigRequest{Enabled: ptr(false)})
		require.NoError(t, err)
		_, err = f.svc.UpdateModelConfig(f.ctx, a.ID, sdk.UpdateChatModelConfigRequest{Enabled: ptr(false)})
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, f.defaults(t), "disabling elects an enabled config, passing over disabled b")

		require.NoError(t, f.svc.DeleteModelConfig(f.ctx, c.ID))
		require.Len(t, f.defaults(t), 1, "deleting the default elects another even if none is enabled")

		// A provider being disabled moves the default to an enabled provider's config.
		q := f.provider(t, "q")
		d := f.model(t, q, "d", true)
		f.model(t, p, "e", false)
		_, err = f.svc.UpdateProvider(f.ctx, q.ID, sdk.UpdateChatProviderConfigRequest{Enabled: ptr(false)})
		require.NoError(t, err)
		require.Equal(t, []string{"e"}, f.defaults(t))
		_, err = f.svc.UpdateModelConfig(f.ctx, d.ID, sdk.UpdateChatModelConfigRequest{IsDefault: ptr(true)})
		require.NoError(t, err)
		require.NoError(t, f.svc.DeleteProvider(f.ctx, q.ID))
		require.Equal(t, []string{"e"}, f.defaults(t), "deleting the default's provider elects another")

		// The only config stays the default when demoted.
		require.NoError(t, f.svc.DeleteProvider(f.ctx, p.ID))
		r := f.provider(t, "r")
		only := f.model(t, r, "only", false)
		got, err := f.svc.UpdateModelConfig(f.ctx, only.ID, sdk.UpdateChatModelConfigRequest{IsDefault: ptr(false)})
		require.NoError(t, err)
		require.True(t, got.IsDefault)
	})
}

// Many writers promoting defaults at once leave exactly one: the writes
// serialize on the advisory lock (on SQLite, on the one writer).
func TestConcurrentDefaults(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		p := f.provider(t, "p")
		var ids []uuid.UUID
		for i := range 4 {
			ids = append(ids, f.model(t, p, fmt.Sprint("seed", i), false).ID)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{AIProviderID: &p.ID, Model: fmt.Sprint("new", i), IsDefault: ptr(true)})
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := f.svc.UpdateModelConfig(f.ctx, ids[i%len(ids)], sdk.UpdateChatModelConfigRequest{IsDefault: ptr(i%3 != 0)})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, f.defaults(t), 1)
	})
}

// API keys are sealed: the database never holds one in clear, the views
// only say whether one is set, and the client gets the clear key.
func TestSecretsSealed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		const key = "sk-very-secret-0123456789"
		p, err := f.svc.CreateProvider(f.ctx, sdk.CreateChatProviderConfigRequest{Provider: "anthropic", APIKey: key})
		require.NoError(t, err)
		require.True(t, p.HasAPIKey)
		f.model(t, p, "claude-sonnet-4-5", false)
		require.NoError(t, f.store.ReadTx(f.ctx, func(tx store.Reader) error {
			row, err := tx.AIProviderGet(f.ctx, p.ID)
			require.NoError(t, err)
			require.NotEmpty(t, row.APIKeyCipher)
			require.False(t, bytes.Contains(row.APIKeyCipher, []byte(key)))
			return nil
		}))
		m, err := f.svc.Resolve(f.ctx, uuid.NullUUID{})
		require.NoError(t, err)
		require.Equal(t, int64(200000), m.ContextLimit, "the built-in table knows the model")
		require.Equal(t, []string{key}, f.keys)

		cleared, err := f.svc.UpdateProvider(f.ctx, p.ID, sdk.UpdateChatProviderConfigRequest{APIKey: ptr("")})
		require.NoError(t, err)
		require.False(t, cleared.HasAPIKey)
	})
}

func TestRotate(t *testing.T) {
	f := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	p := f.provider(t, "p")
	f.model(t, p, "m", false)
	newer, err := modelconfig.NewCipher("new key", "test key")
	require.NoError(t, err)
	svc := modelconfig.New(f.store, modelconfig.Options{Cipher: newer, Clock: f.clock, Factory: f.factory})
	n, err := svc.Rotate(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	only, err := modelconfig.NewCipher("new key", "")
	require.NoError(t, err)
	svc = modelconfig.New(f.store, modelconfig.Options{Cipher: only, Clock: f.clock, Factory: f.factory})
	_, err = svc.Resolve(f.ctx, uuid.NullUUID{})
	require.NoError(t, err, "after the rotation the new key alone opens the API key")
	require.Equal(t, "sk-p", f.keys[len(f.keys)-1])

	wrong, err := modelconfig.NewCipher("other", "")
	require.NoError(t, err)
	svc = modelconfig.New(f.store, modelconfig.Options{Cipher: wrong, Clock: f.clock, Factory: f.factory})
	_, err = svc.Resolve(f.ctx, uuid.NullUUID{})
	require.ErrorIs(t, err, modelconfig.ErrSecretKey)
}

// A chat whose model is gone or disabled runs on the default; an edited
// model keeps its client when its provider did not change.
func TestResolveFallbackAndEdits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		p := f.provider(t, "p")
		def := f.model(t, p, "def", false)
		other := f.model(t, p, "other", false)
		m, err := f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: other.ID, Valid: true})
		require.NoError(t, err)
		require.Equal(t, "other", m.Config.Model)
		client := m.Client

		_, err = f.svc.UpdateModelConfig(f.ctx, other.ID, sdk.UpdateChatModelConfigRequest{DisplayName: "Other"})
		require.NoError(t, err)
		m, err = f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: other.ID, Valid: true})
		require.NoError(t, err)
		require.Equal(t, "Other", m.Config.DisplayName, "the write invalidated the cache")
		require.NotNil(t, m.Client)
		_ = client

		_, err = f.svc.UpdateModelConfig(f.ctx, other.ID, sdk.UpdateChatModelConfigRequest{Enabled: ptr(false)})
		require.NoError(t, err)
		m, err = f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: other.ID, Valid: true})
		require.NoError(t, err)
		require.Equal(t, def.ID, m.Config.ID, "a disabled model falls back to the default")
		m, err = f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: uuid.New(), Valid: true})
		require.NoError(t, err)
		require.Equal(t, def.ID, m.Config.ID, "a deleted model falls back to the default")

		_, err = f.svc.UpdateProvider(f.ctx, p.ID, sdk.UpdateChatProviderConfigRequest{Enabled: ptr(false)})
		require.NoError(t, err)
		_, err = f.svc.Resolve(f.ctx, uuid.NullUUID{})
		require.ErrorIs(t, err, modelconfig.ErrNoDefault)
		list, err := f.svc.Enabled(f.ctx)
		require.NoError(t, err)
		require.Empty(t, list)
	})
}

func TestReasoningEffort(t *testing.T) {
	f := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	p := f.provider(t, "p")
	plain := f.model(t, p, "plain", false)
	reasoning, err := f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{AIProviderID: &p.ID, Model: "o-model",
		ModelConfig: &sdk.ChatModelCallConfig{ReasoningEffort: &sdk.ReasoningEffortConfig{Default: "low", Max: "medium"}, MaxOutputTokens: ptr(int64(99))}})
	require.NoError(t, err)
	require.Equal(t, []string{"none", "minimal", "low", "medium"}, reasoning.ReasoningEfforts)
	require.Empty(t, plain.ReasoningEfforts)

	m, err := f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: plain.ID, Valid: true})
	require.NoError(t, err)
	require.Equal(t, "", m.ReasoningEffort("high"), "not sent to a config without reasoning_effort")
	m, err = f.svc.Resolve(f.ctx, uuid.NullUUID{UUID: reasoning.ID, Valid: true})
	require.NoError(t, err)
	require.Equal(t, "medium", m.ReasoningEffort("xhigh"), "clamped to max")
	require.Equal(t, "low", m.ReasoningEffort(""), "defaulted")
	require.Equal(t, "minimal", m.ReasoningEffort("minimal"))
	require.Equal(t, 99, m.MaxOutputTokens)

	for name, c := range map[string]*sdk.ChatModelCallConfig{
		"model_config.reasoning_effort.max":     {ReasoningEffort: &sdk.ReasoningEffortConfig{Max: "ultra"}},
		"model_config.reasoning_effort.default": {ReasoningEffort: &sdk.ReasoningEffortConfig{Default: "high", Max: "low"}},
		"model_config.max_output_tokens":        {MaxOutputTokens: ptr(int64(0))},
	} {
		_, err := f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{AIProviderID: &p.ID, Model: "x", ModelConfig: c})
		var ie *modelconfig.InvalidError
		require.True(t, errors.As(err, &ie), name)
		require.Equal(t, name, ie.Field)
	}
}

func TestPresets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		pid, mid, demoID := uuid.New(), uuid.New(), uuid.New()
		presets := []modelconfig.Preset{
			{ID: pid, Provider: "openai", DisplayName: "OpenAI", APIKey: "sk-env", Models: []modelconfig.PresetModel{{ID: mid, Model: "gpt-4.1-mini"}}},
			{ID: uuid.New(), Provider: "demo", DisplayName: "Demo", Models: []modelconfig.PresetModel{{ID: demoID, Model: "demo", ContextLimit: 4000}}},
		}
		require.NoError(t, f.svc.ApplyPresets(f.ctx, presets, uuid.NullUUID{UUID: demoID, Valid: true}))
		ms, err := f.svc.ModelConfigs(f.ctx, false)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		byID := map[uuid.UUID]sdk.ChatModelConfig{ms[0].ID: ms[0], ms[1].ID: ms[1]}
		require.Equal(t, store.SourceEnvPreset, byID[mid].Source)
		require.Equal(t, int64(4000), byID[demoID].ContextLimit)
		require.Equal(t, []string{"demo"}, f.defaults(t))

		// Edits through the API survive the next start.
		_, err = f.svc.UpdateModelConfig(f.ctx, mid, sdk.UpdateChatModelConfigRequest{DisplayName: "Mine", IsDefault: ptr(true)})
		require.NoError(t, err)
		require.NoError(t, f.svc.ApplyPresets(f.ctx, presets, uuid.NullUUID{UUID: demoID, Valid: true}))
		ms, err = f.svc.ModelConfigs(f.ctx, false)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		byID = map[uuid.UUID]sdk.ChatModelConfig{ms[0].ID: ms[0], ms[1].ID: ms[1]}
		require.Equal(t, "Mine", byID[mid].DisplayName)
		require.Equal(t, []string{"gpt-4.1-mini"}, f.defaults(t))
	})
}

func TestInvalidInput(t *testing.T) {
	f := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	for field, req := range map[string]sdk.CreateChatProviderConfigRequest{
		"provider": {Provider: "bedrock"},
		"base_url": {Provider: "openai", BaseURL: "ftp://x"},
	} {
		_, err := f.svc.CreateProvider(f.ctx, req)
		var ie *modelconfig.InvalidError
		require.True(t, errors.As(err, &ie), field)
		require.Equal(t, field, ie.Field)
	}
	_, err := f.svc.CreateProvider(f.ctx, sdk.CreateChatProviderConfigRequest{Provider: "openai-compat"})
	require.ErrorContains(t, err, "base_url")
	_, err = f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{Provider: "openai", Model: "m"})
	require.ErrorContains(t, err, "no provider config of type")
	_, err = f.svc.UpdateModelConfig(f.ctx, uuid.New(), sdk.UpdateChatModelConfigRequest{})
	require.ErrorIs(t, err, modelconfig.ErrNotFound)
	p := f.provider(t, "p")
	f.model(t, p, "m", false)
	_, err = f.svc.CreateModelConfig(f.ctx, sdk.CreateChatModelConfigRequest{Provider: "openai", Model: "m"})
	require.ErrorIs(t, err, modelconfig.ErrConflict)
}
