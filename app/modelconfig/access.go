package modelconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ErrKeyUnreadable is ProviderAccess's error for a stored API key that the
// secret keys do not open (see "Secret key rotation" in docs/API.md).
var ErrKeyUnreadable = errors.New("the stored API key cannot be opened with CHATD_SECRET_KEY; set the key again")

// ProviderAccess returns provider id's wire view and its API key in clear
// ("" when it has none), for an admin's connection test. The key must not
// leave the process: callers only send it to the provider itself.
func (s *Service) ProviderAccess(ctx context.Context, id uuid.UUID) (sdk.ChatProviderConfig, string, error) {
	var p store.AIProvider
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		p, err = tx.AIProviderGet(ctx, id)
		return err
	})
	if err != nil {
		return sdk.ChatProviderConfig{}, "", fmt.Errorf("read provider %s: %w", id, translate(err))
	}
	key := ""
	if len(p.APIKeyCipher) > 0 {
		if key, _, err = s.cipher.Open(p.APIKeyCipher); err != nil {
			return sdk.ChatProviderConfig{}, "", fmt.Errorf("provider %s: %w: %w", p.DisplayName, ErrKeyUnreadable, err)
		}
	}
	return ProviderView(p), key, nil
}
