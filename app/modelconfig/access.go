package modelconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ErrKeyUnreadable is ProviderAccess's error for a stored API key that the
// secret keys do not open (see "Secret key rotation" in docs/API.md).
var ErrKeyUnreadable = errors.New("the stored API key cannot be opened with CHATD_SECRET_KEY; set the key again")

// ProviderClient returns provider id's wire view and a client of it built
// by the factory (as a chat's, so its errors come out masked), for an
// admin's connection test; the API key stays inside the client.
// ErrKeyUnreadable when the stored key does not open.
func (s *Service) ProviderClient(ctx context.Context, id uuid.UUID) (sdk.ChatProviderConfig, llm.Provider, error) {
	var p store.AIProvider
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		p, err = tx.AIProviderGet(ctx, id)
		return err
	})
	if err != nil {
		return sdk.ChatProviderConfig{}, nil, fmt.Errorf("read provider %s: %w", id, translate(err))
	}
	key := ""
	if len(p.APIKeyCipher) > 0 {
		if key, _, err = s.cipher.Open(p.APIKeyCipher); err != nil {
			return sdk.ChatProviderConfig{}, nil, fmt.Errorf("provider %s: %w: %w", p.DisplayName, ErrKeyUnreadable, err)
		}
	}
	if s.cache.factory == nil {
		return sdk.ChatProviderConfig{}, nil, errors.New("modelconfig: no client factory")
	}
	cl, err := s.cache.factory(p, key, nil)
	if err != nil {
		return sdk.ChatProviderConfig{}, nil, fmt.Errorf("provider %s: %w", p.DisplayName, err)
	}
	return ProviderView(p), cl, nil
}
