package telemetry

import (
	"context"
	"errors"
	"path"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// Transaction kinds of chatd_store_tx_duration_seconds.
const (
	txRead  = "read"
	txWrite = "write"
)

// storeTxBuckets resolve sub-millisecond SQLite reads up to multi-second
// lock waits.
var storeTxBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// measuredStore is the store every part of the app uses: each InTx and
// ReadTx is timed in chatd_store_tx_duration_seconds{store,tx}, and a
// transaction that failed with store.ErrConflict (a unique constraint: two
// writers raced for the same row) is counted in
// chatd_store_tx_conflicts_total{store}. It keeps the store's optional
// capabilities that the app asks for later (SharedByReplicas).
type measuredStore struct {
	store.Store
	clock     clock.Clock
	read      prometheus.Observer
	write     prometheus.Observer
	conflicts prometheus.Counter
}

// MeasureStore registers the store metrics on reg and wraps s. The store
// label is the store's package name (sqlite, postgres).
func MeasureStore(s store.Store, reg prometheus.Registerer, clk clock.Clock) store.Store {
	name := storeName(s)
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chatd_store_tx_duration_seconds",
		Help:    "Store transaction latency (including lock waits and commit) by store and kind (read, write).",
		Buckets: storeTxBuckets,
	}, []string{"store", "tx"})
	conflicts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_store_tx_conflicts_total",
		Help: "Store transactions that failed on a conflict (a unique constraint), by store.",
	}, []string{"store"})
	reg.MustRegister(dur, conflicts)
	return &measuredStore{
		Store: s, clock: clk,
		read: dur.WithLabelValues(name, txRead), write: dur.WithLabelValues(name, txWrite),
		conflicts: conflicts.WithLabelValues(name),
	}
}

func storeName(s store.Store) string {
	t := reflect.TypeOf(s)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := path.Base(t.PkgPath()); p != "." && p != "" {
		return p
	}
	return "unknown"
}

// InTx runs a write transaction, timed and its conflicts counted.
func (s *measuredStore) InTx(ctx context.Context, fn func(store.Tx) error) error {
	start := s.clock.Now()
	err := s.Store.InTx(ctx, fn)
	s.write.Observe(s.clock.Now().Sub(start).Seconds())
	if errors.Is(err, store.ErrConflict) {
		s.conflicts.Inc()
	}
	return err
}

// ReadTx runs a read transaction, timed.
func (s *measuredStore) ReadTx(ctx context.Context, fn func(store.Reader) error) error {
	start := s.clock.Now()
	err := s.Store.ReadTx(ctx, fn)
	s.read.Observe(s.clock.Now().Sub(start).Seconds())
	return err
}

// SharedByReplicas forwards the wrapped store's answer.
func (s *measuredStore) SharedByReplicas() bool {
	r, ok := s.Store.(interface{ SharedByReplicas() bool })
	return ok && r.SharedByReplicas()
}
