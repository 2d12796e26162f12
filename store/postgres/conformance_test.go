package postgres

import (
	"testing"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
}
