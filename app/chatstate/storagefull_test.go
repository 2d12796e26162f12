package chatstate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// refusingStore fails every write transaction with err, as a database
// whose disk is full does.
type refusingStore struct {
	store.Store
	err error
}

func (s refusingStore) InTx(context.Context, func(store.Tx) error) error { return s.err }

// TestOnStorageFull: a bundle refused for full storage is reported to the
// hook (so /healthz sees the worker's writes too); other failures are not.
func TestOnStorageFull(t *testing.T) {
	t.Parallel()
	base := dbtest.NewSQLite(t)
	for _, c := range []struct {
		name   string
		err    error
		report bool
	}{
		{"storage full", fmt.Errorf("commit: %w", store.ErrStorageFull), true},
		{"other failure", fmt.Errorf("commit: %w", store.ErrUnavailable), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var heard []error
			m := chatstate.New(refusingStore{Store: base, err: c.err}, &recorder{}, chatstate.Config{
				OnStorageFull: func(err error) { heard = append(heard, err) },
			})
			err := m.Do(context.Background(), func(*chatstate.Tx) error { return nil })
			require.True(t, errors.Is(err, c.err))
			if c.report {
				require.Equal(t, []error{c.err}, heard)
			} else {
				require.Empty(t, heard)
			}
		})
	}
}
