package app

import (
	"github.com/chatd/chatd/store/postgres"
)

// The capabilities are found by type assertion at run time; these make a
// signature that drifts a compile error instead of a silent fallback to
// in-process pubsub and in-memory heartbeats on Postgres.
var (
	_ pubsubProvider = (*postgres.Store)(nil)
	_ replicated     = (*postgres.Store)(nil)
)
