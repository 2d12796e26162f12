package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// Auto-archive defaults (spec: "Auto-archive loop").
const (
	// DefaultAutoArchiveInterval is the time between auto-archive ticks.
	// The cutoff moves once a day, so an hour keeps archiving prompt
	// without reading candidates often.
	DefaultAutoArchiveInterval = time.Hour
	// AutoArchiveBatch is how many candidates one tick reads.
	AutoArchiveBatch = 100
)

// autoArchiveLoop archives old unused root chat families every
// AutoArchiveInterval, the first tick at once. It runs only with
// AutoArchiveDays > 0.
func (w *Worker) autoArchiveLoop(ctx context.Context) {
	for {
		if _, err := w.autoArchivePass(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("auto-archive", "err", err)
		}
		if sleep(ctx, w.clock, w.cfg.AutoArchiveInterval) != nil {
			return
		}
	}
}

// autoArchivePass is one tick: a batch of candidates read without locks,
// then one transaction per candidate that rechecks it under lock. It
// reports how many families it archived.
func (w *Worker) autoArchivePass(ctx context.Context) (int, error) {
	cutoff := chatstate.AutoArchiveCutoff(w.clock.Now(), w.cfg.AutoArchiveDays)
	candidates, err := w.archiveCandidates(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	return w.archiveFamilies(ctx, candidates, cutoff)
}

// archiveCandidates reads a batch of root chats that qualified for
// auto-archive at the time of the read (no locks held).
func (w *Worker) archiveCandidates(ctx context.Context, cutoff time.Time) ([]store.Chat, error) {
	var candidates []store.Chat
	err := w.deps.Store.ReadTx(ctx, func(r store.Reader) error {
		var err error
		candidates, err = r.ChatListArchivable(ctx, store.ArchivableParams{Cutoff: cutoff, Limit: AutoArchiveBatch})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read auto-archive candidates: %w", err)
	}
	return candidates, nil
}

// archiveFamilies archives each candidate's family in its own transaction
// (chatstate.Tx.AutoArchive). A candidate that no longer qualifies is
// skipped; one that fails is logged and the others still run.
func (w *Worker) archiveFamilies(ctx context.Context, candidates []store.Chat, cutoff time.Time) (int, error) {
	archived := 0
	for _, c := range candidates {
		err := w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
			_, err := t.AutoArchive(c.ID, cutoff)
			return err
		})
		switch {
		case err == nil:
			archived++
			w.log.Info("auto-archived chat", "chat_id", c.ID, "cutoff", cutoff)
		case errors.Is(err, chatstate.ErrNotArchivable):
			w.log.Debug("auto-archive skipped chat", "chat_id", c.ID, "err", err)
		case ctx.Err() != nil:
			return archived, ctx.Err()
		default:
			w.log.Warn("auto-archive chat", "chat_id", c.ID, "err", err)
		}
	}
	return archived, nil
}
