package modelconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Preset is a provider the environment configures, with its models.
type Preset struct {
	// ID is stable across starts and replicas (the caller derives it).
	ID          uuid.UUID
	Provider    string // provider type
	DisplayName string
	BaseURL     string
	APIKey      string
	Models      []PresetModel
}

// PresetModel is one model of a Preset; ID keeps the model id chats
// already store.
type PresetModel struct {
	ID           uuid.UUID
	Model        string
	DisplayName  string
	ContextLimit int64
	// ModelConfig is the config's model_config (nil: none).
	ModelConfig *sdk.ChatModelCallConfig
}

// ApplyPresets creates the presets' providers and models that do not exist
// yet (source env_preset). Existing rows are left alone, so edits made
// through the API win. When the configuration had no default before,
// defaultID (if it is among the presets) becomes the default.
func (s *Service) ApplyPresets(ctx context.Context, presets []Preset, defaultID uuid.NullUUID) error {
	return s.write(ctx, func(tx store.Tx) error {
		before, err := tx.ModelConfigList(ctx)
		if err != nil {
			return err
		}
		hadDefault := false
		for _, m := range before {
			hadDefault = hadDefault || m.IsDefault
		}
		now := s.clock.Now()
		for _, pr := range presets {
			if _, err := tx.AIProviderGet(ctx, pr.ID); errors.Is(err, store.ErrNotFound) {
				p := store.AIProvider{ID: pr.ID, Provider: pr.Provider, DisplayName: pr.DisplayName, BaseURL: pr.BaseURL,
					Enabled: true, Source: store.SourceEnvPreset, CreatedAt: now, UpdatedAt: now}
				if pr.APIKey != "" {
					p.APIKeyCipher = s.cipher.Seal(pr.APIKey)
				}
				if _, err := tx.AIProviderInsert(ctx, p); err != nil {
					return fmt.Errorf("preset provider %s: %w", pr.DisplayName, err)
				}
			} else if err != nil {
				return err
			}
			for _, pm := range pr.Models {
				if _, err := tx.ModelConfigGet(ctx, pm.ID); err == nil {
					continue
				} else if !errors.Is(err, store.ErrNotFound) {
					return err
				}
				m := store.ModelConfig{ID: pm.ID, AIProviderID: pr.ID, Model: pm.Model, DisplayName: pm.DisplayName,
					Enabled: true, ContextLimit: pm.ContextLimit, Options: encodeOptions(pm.ModelConfig), Source: store.SourceEnvPreset,
					CreatedAt: now, UpdatedAt: now}
				if m.DisplayName == "" {
					m.DisplayName = pm.Model
				}
				makeDefault := !hadDefault && defaultID.Valid && defaultID.UUID == pm.ID
				if _, err := s.insertModel(ctx, tx, m, makeDefault); err != nil {
					if errors.Is(err, store.ErrConflict) {
						continue // the API already configured this model of the provider under another id
					}
					return fmt.Errorf("preset model %s: %w", pm.Model, err)
				}
			}
		}
		return nil
	})
}

// Rotate seals again every API key that opens only with the previous key
// (CHATD_SECRET_KEY_PREVIOUS), and reports how many it sealed. A key that
// opens with neither is an error: nothing is changed then.
func (s *Service) Rotate(ctx context.Context) (int, error) {
	n := 0
	err := s.write(ctx, func(tx store.Tx) error {
		ps, err := tx.AIProviderList(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if len(p.APIKeyCipher) == 0 {
				continue
			}
			key, stale, err := s.cipher.Open(p.APIKeyCipher)
			if err != nil {
				return fmt.Errorf("provider %s (%s): %w", p.DisplayName, p.ID, err)
			}
			if !stale {
				continue
			}
			// The row's updated_at stays: the configuration did not change.
			p.APIKeyCipher = s.cipher.Seal(key)
			if _, err := tx.AIProviderUpdate(ctx, p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
