package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// Providers and model configs round-trip, list oldest first, allow at most
// one default and one config per provider and model, and go with their
// provider when it is deleted.
func testProvidersAndModelConfigs(t *testing.T, b *bundle) {
	empty := func(tx store.Reader) {
		ps, err := tx.AIProviderList(b.ctx)
		require.NoError(t, err)
		require.NotNil(t, ps)
		require.Empty(t, ps)
		ms, err := tx.ModelConfigList(b.ctx)
		require.NoError(t, err)
		require.NotNil(t, ms)
		require.Empty(t, ms)
	}
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error { empty(tx); return nil }))

	prov := store.AIProvider{ID: uuid.New(), Provider: store.ProviderOpenAI, DisplayName: "OpenAI",
		BaseURL: "https://api.example.com/v1", APIKeyCipher: []byte{0, 1, 2, 0xff}, Enabled: true,
		Source: store.SourceDatabase, CreatedAt: b.now, UpdatedAt: b.now}
	mc := store.ModelConfig{ID: uuid.New(), AIProviderID: prov.ID, Model: "gpt-x", DisplayName: "GPT X",
		Enabled: true, IsDefault: true, ContextLimit: 128000, CompressionThreshold: 70,
		Options: json.RawMessage(`{"max_output_tokens":100}`), Source: store.SourceEnvPreset, CreatedAt: b.now, UpdatedAt: b.now}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		require.NoError(t, tx.ModelConfigWriteLock(b.ctx))
		got, err := tx.AIProviderInsert(b.ctx, prov)
		require.NoError(t, err)
		require.Equal(t, prov, got)
		gm, err := tx.ModelConfigInsert(b.ctx, mc)
		require.NoError(t, err)
		require.JSONEq(t, string(mc.Options), string(gm.Options))
		gm.Options = mc.Options
		require.Equal(t, mc, gm)
		return nil
	}))

	// A second default, or the same model twice, is a conflict.
	for name, m := range map[string]store.ModelConfig{
		"second default": {ID: uuid.New(), AIProviderID: prov.ID, Model: "other", IsDefault: true},
		"same model":     {ID: uuid.New(), AIProviderID: prov.ID, Model: "gpt-x"},
	} {
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			m.Source, m.CreatedAt, m.UpdatedAt = store.SourceDatabase, b.now, b.now
			_, err := tx.ModelConfigInsert(b.ctx, m)
			return err
		})
		require.ErrorIs(t, err, store.ErrConflict, name)
	}
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ModelConfigInsert(b.ctx, store.ModelConfig{ID: uuid.New(), AIProviderID: uuid.New(), Model: "m",
			Source: store.SourceDatabase, CreatedAt: b.now, UpdatedAt: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey, "a model config needs its provider")
	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.AIProviderInsert(b.ctx, store.AIProvider{ID: uuid.New(), Provider: "bedrock", Source: store.SourceDatabase,
			CreatedAt: b.now, UpdatedAt: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrInvariant, "unknown provider types are refused")

	later := b.now.Add(time.Second)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		p := prov
		p.DisplayName, p.BaseURL, p.APIKeyCipher, p.Enabled, p.UpdatedAt = "Renamed", "", nil, false, later
		got, err := tx.AIProviderUpdate(b.ctx, p)
		require.NoError(t, err)
		require.Equal(t, p, got)
		m := mc
		m.IsDefault, m.Enabled, m.ContextLimit, m.Options, m.UpdatedAt = false, false, 0, nil, later
		gm, err := tx.ModelConfigUpdate(b.ctx, m)
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(gm.Options))
		require.False(t, gm.IsDefault)
		require.Equal(t, later, gm.UpdatedAt)

		second := store.ModelConfig{ID: uuid.New(), AIProviderID: prov.ID, Model: "other", IsDefault: true,
			Source: store.SourceDatabase, CreatedAt: later, UpdatedAt: later}
		_, err = tx.ModelConfigInsert(b.ctx, second)
		require.NoError(t, err)
		ms, err := tx.ModelConfigList(b.ctx)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Equal(t, []uuid.UUID{mc.ID, second.ID}, []uuid.UUID{ms[0].ID, ms[1].ID})

		_, err = tx.AIProviderUpdate(b.ctx, store.AIProvider{ID: uuid.New(), Provider: store.ProviderOpenAI})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.ModelConfigGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err := tx.ModelConfigDelete(b.ctx, second.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.AIProviderDelete(b.ctx, prov.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		empty(tx)
		return nil
	}))
}
