package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/storetest"
)

// rawExec runs one statement in the transaction. It is the conformance
// suite's way around the typed operations, and exists only in tests.
func rawExec(ctx context.Context, stx store.Tx, query string, args ...any) (int64, error) {
	tag, err := stx.(*tx).tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("exec raw: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) (store.Store, storetest.Exec) { return newTestStore(t), rawExec })
}
