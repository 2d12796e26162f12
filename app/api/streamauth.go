package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/store"
)

// DefaultStreamAuthInterval is how often an open stream re-checks the
// credential it was opened with. A revocation on this replica (token
// revoked, user disabled or demoted, logout) re-checks that user's streams
// at once; one made on another replica or by the CLI is noticed within
// the interval.
const DefaultStreamAuthInterval = 30 * time.Second

// ErrStreamUnauthorized is the cause of a stream's context when its
// credential stopped authenticating, or stopped admitting it to the chat,
// while it was open. The stream closes the WebSocket with 1008 (policy
// violation) and this reason; reconnecting gets the 401 or 404.
var ErrStreamUnauthorized error = streamRevoked{}

type streamRevoked struct{}

func (streamRevoked) Error() string { return "credentials revoked" }

// CloseStatus is the stream's close status (stream.CloseStatuser).
func (streamRevoked) CloseStatus() (int, string) { return 1008, "credentials revoked" }

// streamAuth is the registry of open streams by user, so a revocation
// made here reaches that user's streams without waiting for their next
// periodic check.
type streamAuth struct {
	mu     sync.Mutex
	byUser map[uuid.UUID]map[chan struct{}]struct{}
}

// recheck asks every open stream of user to re-check its credential now.
func (a *streamAuth) recheck(user uuid.UUID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ch := range a.byUser[user] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (a *streamAuth) add(user uuid.UUID, ch chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byUser == nil {
		a.byUser = map[uuid.UUID]map[chan struct{}]struct{}{}
	}
	if a.byUser[user] == nil {
		a.byUser[user] = map[chan struct{}]struct{}{}
	}
	a.byUser[user][ch] = struct{}{}
}

func (a *streamAuth) remove(user uuid.UUID, ch chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byUser[user], ch)
	if len(a.byUser[user]) == 0 {
		delete(a.byUser, user)
	}
}

// guardStream returns r with a context that ends, with cause
// ErrStreamUnauthorized, once r's credential no longer authenticates as
// user or still (check, when non-nil) admits it; stop ends the watch and
// waits for it. A failure to reach the database is not a revocation: the
// stream stays open and the next check decides.
func (s *Server) guardStream(r *http.Request, user uuid.UUID, check func(context.Context, store.User) error) (_ *http.Request, stop func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	tok, _ := requestToken(r)
	wake := make(chan struct{}, 1)
	s.streams.add(user, wake)
	interval := s.cfg.StreamAuthInterval
	if interval <= 0 {
		interval = DefaultStreamAuthInterval
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-s.deps.Clock.After(interval):
			}
			u, err := s.deps.Tokens.Authenticate(ctx, tok)
			if err == nil && u.ID != user {
				err = auth.ErrUnauthenticated
			}
			if err == nil && check != nil {
				err = check(ctx, u)
			}
			if err != nil && revoked(err) {
				cancel(ErrStreamUnauthorized)
				return
			}
		}
	}()
	return r.WithContext(ctx), func() {
		cancel(context.Canceled)
		<-done
		s.streams.remove(user, wake)
	}
}

// revoked reports whether a re-check's error means the caller lost access
// (as opposed to the database not answering).
func revoked(err error) bool {
	var apiErr *apiError
	return errors.Is(err, auth.ErrUnauthenticated) || errors.As(err, &apiErr) && apiErr.status == http.StatusNotFound
}
