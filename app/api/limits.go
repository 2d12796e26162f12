package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
)

// Defaults of the limits for a deployed server. Limits is zero (unlimited)
// unless the operator's settings fill it: config.FromEnv takes these when a
// variable is unset, and 0 there means unlimited (benchmarks, load tests).
const (
	DefaultWritesPerMinute      = 300      // state-changing requests per user
	DefaultLoginsPerMinute      = 10       // login attempts per client IP
	DefaultMaxChatsPerUser      = 10000    // chats a user owns, archived included
	DefaultMaxStreamsPerUser    = 32       // open chat streams per user, per replica
	DefaultMaxDynamicTools      = 128      // unsafe_dynamic_tools per create request
	DefaultMaxSystemPromptBytes = 64 << 10 // system_prompt of a create request
)

// healthStorageWindow is how long /healthz reports a storage-full write
// failure: with no write since, the disk is presumed still full.
const healthStorageWindow = time.Minute

// Limits are the per-user quotas and rates. Zero means unlimited in every
// field.
type Limits struct {
	// WritesPerMinute is each user's token bucket for state-changing API
	// requests (POST, PATCH, DELETE): it holds a minute's worth and refills
	// continuously. Beyond: 429 RATE_LIMITED with Retry-After.
	WritesPerMinute int
	// LoginsPerMinute is the same bucket for POST /auth/login, per client IP.
	LoginsPerMinute int
	// MaxChatsPerUser caps the chats a user owns (429 LIMIT_REACHED).
	MaxChatsPerUser int
	// MaxStreamsPerUser caps a user's open chat streams on this replica
	// (429 LIMIT_REACHED).
	MaxStreamsPerUser int
	// MaxDynamicTools caps unsafe_dynamic_tools of one request (400 VALIDATION).
	MaxDynamicTools int
	// MaxSystemPromptBytes caps system_prompt (413 TOO_LARGE).
	MaxSystemPromptBytes int
}

// bucket is a token bucket: tokens refill at rate per second up to burst.
type bucket struct {
	tokens float64
	at     time.Time
}

// rateLimiter holds one token bucket per key (a user id, a client IP).
// Buckets that have refilled completely carry no state and are dropped, so
// the map only holds keys that were active within about a minute.
type rateLimiter struct {
	clock   clock.Clock
	rate    float64 // tokens per second
	burst   float64
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

// newRateLimiter limits each key to perMinute events a minute, or returns
// nil (unlimited) when perMinute is not positive.
func newRateLimiter(c clock.Clock, perMinute int) *rateLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &rateLimiter{clock: c, rate: float64(perMinute) / 60, burst: float64(perMinute), buckets: map[string]*bucket{}}
}

// allow takes a token for key. When none is left it reports how long until
// one is.
func (l *rateLimiter) allow(key string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now)
	b, found := l.buckets[key]
	if !found {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+elapsed*l.rate)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// sweepLocked drops the buckets that are full again, at most once a minute.
func (l *rateLimiter) sweepLocked(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// slots counts something held per user (open streams) against a cap.
type slots struct {
	max  int
	mu   sync.Mutex
	held map[uuid.UUID]int
}

// acquire takes a slot for user; release gives it back. It reports false,
// and takes nothing, when the user holds max already.
func (s *slots) acquire(user uuid.UUID) (release func(), ok bool) {
	if s.max <= 0 {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[user] >= s.max {
		return nil, false
	}
	s.held[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.held[user]--; s.held[user] <= 0 {
				delete(s.held, user)
			}
		})
	}, true
}

// guards are the server's limiters and the storage health it reports.
type guards struct {
	limits  Limits
	clock   clock.Clock
	writes  *rateLimiter
	logins  *rateLimiter
	streams *slots

	mu          sync.Mutex
	storageFull time.Time // the last write refused for a full disk
}

func newGuards(l Limits, c clock.Clock) *guards {
	return &guards{
		limits: l, clock: c,
		writes:  newRateLimiter(c, l.WritesPerMinute),
		logins:  newRateLimiter(c, l.LoginsPerMinute),
		streams: &slots{max: l.MaxStreamsPerUser, held: map[uuid.UUID]int{}},
	}
}

// noteStorageFull records a write refused because the disk is full. It
// reports whether this starts a new report (none within the window), so
// the operator is told once, not on every refused write.
func (g *guards) noteStorageFull() (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	first = g.storageFull.IsZero() || now.Sub(g.storageFull) >= healthStorageWindow
	g.storageFull = now
	return first
}

// NoteStorageFull records a write refused because the storage is full
// that was made outside a request (the worker's), so /healthz reports it;
// the first in a report window is logged.
func (s *Server) NoteStorageFull(err error) {
	if s.guards.noteStorageFull() {
		s.deps.Log.Error("storage full: writes fail until space is freed", "err", err)
	}
}

// storageFullSince reports the last storage-full failure when it is recent
// enough for /healthz to report it.
func (g *guards) storageFullSince() (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.storageFull.IsZero() || g.clock.Now().Sub(g.storageFull) >= healthStorageWindow {
		return time.Time{}, false
	}
	return g.storageFull, true
}

// rateLimited is the 429 answer; Retry-After goes with it (writeError).
type rateLimited struct {
	*apiError
	retryAfter time.Duration
}

func (e *rateLimited) Unwrap() error { return e.apiError }

// errRateLimited builds the 429 RATE_LIMITED answer for what.
func errRateLimited(what string, retryAfter time.Duration) error {
	secs := max(1, int(math.Ceil(retryAfter.Seconds())))
	return &rateLimited{
		apiError:   newError(http.StatusTooManyRequests, sdk.CodeRateLimited, "Too many "+what+"; slow down.", fmt.Sprintf("retry after %d s", secs)),
		retryAfter: time.Duration(secs) * time.Second,
	}
}

func errLimitReached(detail string) *apiError {
	return newError(http.StatusTooManyRequests, sdk.CodeLimitReached, "A limit of your account is reached.", detail)
}

// setRetryAfter adds Retry-After to a rate-limited answer.
func setRetryAfter(w http.ResponseWriter, err error) {
	var rl *rateLimited
	if errors.As(err, &rl) {
		w.Header().Set("Retry-After", strconv.Itoa(int(rl.retryAfter/time.Second)))
	}
}

// limitWrites spends one of the caller's write tokens on a state-changing
// request before h runs.
func (s *Server) limitWrites(h func(http.ResponseWriter, *http.Request, *caller) error) func(http.ResponseWriter, *http.Request, *caller) error {
	return func(w http.ResponseWriter, r *http.Request, c *caller) error {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if ok, wait := s.guards.writes.allow(c.user.ID.String()); !ok {
				return errRateLimited("requests", wait)
			}
		}
		return h(w, r, c)
	}
}

// limitLogins spends one of the client IP's login tokens before h runs.
// The IP is the connection's peer, or the client a trusted proxy names in
// X-Forwarded-For (clientIP).
func (s *Server) limitLogins(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if ok, wait := s.guards.logins.allow(s.clientIP(r)); !ok {
			return errRateLimited("login attempts", wait)
		}
		return h(w, r)
	}
}

// checkCreateLimits checks the size limits of a create request.
func (s *Server) checkCreateLimits(systemPrompt string, tools int) error {
	l := s.guards.limits
	if l.MaxSystemPromptBytes > 0 && len(systemPrompt) > l.MaxSystemPromptBytes {
		return newError(http.StatusRequestEntityTooLarge, sdk.CodeTooLarge, "The system prompt is too large.",
			fmt.Sprintf("system_prompt is %d bytes; at most %d", len(systemPrompt), l.MaxSystemPromptBytes))
	}
	if l.MaxDynamicTools > 0 && tools > l.MaxDynamicTools {
		return validation("unsafe_dynamic_tools", fmt.Sprintf("%d dynamic tools; at most %d", tools, l.MaxDynamicTools))
	}
	return nil
}

// checkChatQuota refuses a new chat when the owner has MaxChatsPerUser. It
// runs in the create's transaction, holding the owner's lock so that
// concurrent creates count each other.
func (s *Server) checkChatQuota(r *http.Request, t *chatstate.Tx, owner uuid.UUID) error {
	limit := s.guards.limits.MaxChatsPerUser
	if limit <= 0 {
		return nil
	}
	if err := t.LockOwner(owner); err != nil {
		return err
	}
	n, err := t.Reader().ChatCountByOwner(r.Context(), owner)
	if err != nil {
		return fmt.Errorf("count chats of %s: %w", owner, err)
	}
	if n >= int64(limit) {
		return errLimitReached(fmt.Sprintf("you have %d chats; at most %d (archived chats count: delete some)", n, limit))
	}
	return nil
}

// acquireStream takes one of the user's open-stream slots.
func (s *Server) acquireStream(user uuid.UUID) (release func(), err error) {
	release, ok := s.guards.streams.acquire(user)
	if !ok {
		return nil, errLimitReached(fmt.Sprintf("at most %d open streams per user", s.guards.limits.MaxStreamsPerUser))
	}
	return release, nil
}
