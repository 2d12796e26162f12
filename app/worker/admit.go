package worker

import (
	"context"
	"errors"
	"math"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// Direct admission. A bundle that leaves a chat runnable without a live
// owner (a message sent to an idle chat, a chat created with one, an
// edit, a subagent spawned) acquires it for this replica's worker in its
// own transaction (chatstate.Admitter, called at the end of Machine.Do),
// instead of committing, notifying, and leaving the acquisition loop a
// read and a write transaction of its own before the turn can start. It
// applies the same rules as an acquisition pass, under the admission
// lock, and steps aside whenever the pass's fairness could differ:
//   - chats wait for a slot: the last pass left some, or an admission was
//     refused for room since (they go first, in the pass's order), or no
//     pass has run yet since the start;
//   - another transaction holds the admission lock (this bundle already
//     holds the chat's lock and must not wait for it: an acquisition takes
//     the admission lock first, then the chat);
//   - the worker is draining or stopped.
//
// A chat it does not admit is left to the acquisition loop exactly as
// before: the bundle still publishes chat:ownership for it.

// Admit implements chatstate.Admitter.
func (w *Worker) Admit(t *chatstate.Tx, c store.Chat) (chatstate.Admission, error) {
	runCtx, ok := w.openAdmission()
	if !ok {
		return chatstate.Admission{}, nil
	}
	// Counted out here unless an Admission takes it over, also when a
	// store call panics or ends the goroutine: Drain and Stop wait for it.
	handed := false
	defer func() {
		if !handed {
			w.admitting.Done()
		}
	}()
	a, err := w.admitIn(t, c)
	if errors.Is(err, errNoRoom) {
		// Waiting for a slot now: later chats go after it, through the
		// pass the bundle's chat:ownership notice wakes.
		w.noteWaiting()
	}
	if err != nil || a == nil {
		if errors.Is(err, errSkip) {
			err = nil
		}
		return chatstate.Admission{}, err
	}
	handed = true
	return chatstate.Admission{
		// The runner is listed only once the chat is committed, as after
		// the loop's acquisitions: the sync loop reads every listed
		// runner's chat and stops the runner of one it does not find,
		// which a chat this bundle created is, until it commits.
		Committed: func() {
			defer w.admitting.Done()
			w.log.Debug("admitted chat", "chat_id", a.chat.ID, "runner_id", a.runnerID)
			w.manager.spawn(runCtx, *a)
		},
		RolledBack: func() {
			defer w.admitting.Done()
			// A COMMIT reported failed may have committed all the same,
			// leaving the chat owned by a runner that never ran and with
			// no chat:ownership notice: look at once.
			w.wakeAcquire()
		},
	}, nil
}

// admitIn acquires c in t if nothing asks to leave it to the acquisition
// loop (nil: left).
func (w *Worker) admitIn(t *chatstate.Tx, c store.Chat) (*acquisition, error) {
	if needsSlot(c) && w.waiting.Load() > 0 {
		return nil, nil
	}
	locked, err := t.TryLockAdmission()
	if err != nil || !locked {
		return nil, err
	}
	a, err := w.acquireIn(t.Context(), t, c.ID)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// noteWaiting counts one more chat waiting for a slot (unless no pass
// has counted them yet).
func (w *Worker) noteWaiting() {
	for {
		n := w.waiting.Load()
		if n == math.MaxInt64 || w.waiting.CompareAndSwap(n, n+1) {
			return
		}
	}
}

// openAdmission counts an admission in, unless the worker is not running
// or no longer acquires; it returns the context its runner runs under.
func (w *Worker) openAdmission() (context.Context, bool) {
	w.admitMu.Lock()
	defer w.admitMu.Unlock()
	if w.runCtx == nil || w.admitShut || !w.acquiring() {
		return nil, false
	}
	w.admitting.Add(1)
	return w.runCtx, true
}

// closeAdmission waits for the admissions in flight to end; none opens
// after it (Drain has stopped acquiring; stop: Stop has begun).
func (w *Worker) closeAdmission(stop bool) {
	w.admitMu.Lock()
	if stop {
		w.admitShut = true
	}
	w.admitMu.Unlock()
	w.admitting.Wait()
}
