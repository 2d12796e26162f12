package postgres

import (
	"context"
	"log/slog"
)

// This file holds the optional capabilities the app asks a store for. They
// are what makes Postgres the multi-replica store: the app checks for them
// with small interfaces of its own instead of naming *Store.

// Notifier is the pubsub OpenPubsub returns. It is a type literal (the
// methods of app/pubsub.Pubsub plus Close) so that the app can declare the
// same type without either package importing the other.
type Notifier = interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
	Close() error
}

// OpenPubsub starts a LISTEN/NOTIFY Pubsub on the store's pool: what one
// process publishes reaches every process on the same database. It logs to
// log once when the database becomes unreachable and once when it is back.
// Close it before the store.
func (s *Store) OpenPubsub(ctx context.Context, log *slog.Logger) (Notifier, error) {
	ps, err := newPubsub(ctx, s.pool, log)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return ps, nil
}

// SharedByReplicas reports true: any number of chatd replicas may share a
// Postgres database, so they hold chats by heartbeat leases and publish
// their addresses for the stream relay.
func (s *Store) SharedByReplicas() bool { return true }
