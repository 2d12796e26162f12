// Package webhooks keeps completion webhooks (API.md "Webhooks"): a
// Service that checks and writes registrations, and a Deliverer that POSTs
// the outbox app/chatstate writes with each event, signed, retried with
// backoff for 24 hours, in order per chat, at least once.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// DefaultMaxPerUser caps a user's webhooks (CHATD_MAX_WEBHOOKS_PER_USER).
const DefaultMaxPerUser = 10

// Errors the API maps.
var (
	ErrNotFound     = errors.New("webhook not found")
	ErrLimitReached = errors.New("webhook limit reached")
	// ErrPrivateAddress: the address is private or loopback and
	// CHATD_WEBHOOK_ALLOW_PRIVATE is off.
	ErrPrivateAddress = errors.New("private or loopback addresses are refused (CHATD_WEBHOOK_ALLOW_PRIVATE)")
)

// InputError is a field of a request that cannot be used.
type InputError struct{ Field, Detail string }

func (e *InputError) Error() string { return e.Field + ": " + e.Detail }

// Config tunes the service and the deliverer.
type Config struct {
	// AllowPrivate lets webhooks reach private and loopback addresses.
	AllowPrivate bool
	// MaxPerUser caps a user's webhooks (0: DefaultMaxPerUser; negative:
	// unlimited).
	MaxPerUser int
}

// Service checks and writes webhook registrations.
type Service struct {
	store store.Store
	clock clock.Clock
	cfg   Config
}

// New returns a Service over s.
func New(s store.Store, c clock.Clock, cfg Config) *Service {
	if cfg.MaxPerUser == 0 {
		cfg.MaxPerUser = DefaultMaxPerUser
	}
	if c == nil {
		c = clock.Real{}
	}
	return &Service{store: s, clock: c, cfg: cfg}
}

// Registration is a webhook to create: for owner (unset: global), for
// chat (unset: every chat).
type Registration struct {
	URL       string
	Events    []string
	Secret    string
	Owner     uuid.NullUUID
	Chat      uuid.NullUUID
	CreatedBy uuid.UUID
}

// Create checks and stores a webhook. An empty secret is made up; the
// returned row carries it.
func (s *Service) Create(ctx context.Context, r Registration) (store.Webhook, error) {
	if err := CheckURL(r.URL, s.cfg.AllowPrivate); err != nil {
		return store.Webhook{}, err
	}
	if len(r.Events) == 0 {
		return store.Webhook{}, &InputError{Field: "events", Detail: "name at least one of " + strings.Join(store.AllWebhookEvents, ", ")}
	}
	events := []string{}
	for _, e := range r.Events {
		if !slices.Contains(store.AllWebhookEvents, e) {
			return store.Webhook{}, &InputError{Field: "events", Detail: fmt.Sprintf("%q is not one of %s", e, strings.Join(store.AllWebhookEvents, ", "))}
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	if len(r.Secret) > 256 {
		return store.Webhook{}, &InputError{Field: "secret", Detail: "at most 256 bytes"}
	}
	if r.Secret == "" {
		var b [24]byte
		_, _ = rand.Read(b[:])
		r.Secret = "whsec_" + hex.EncodeToString(b[:])
	}
	w := store.Webhook{ID: uuid.New(), OwnerID: r.Owner, ChatID: r.Chat, URL: r.URL, Events: events, Secret: r.Secret,
		CreatedBy: r.CreatedBy, CreatedAt: s.clock.Now().UTC()}
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		if r.Owner.Valid && s.cfg.MaxPerUser > 0 {
			if err := tx.UserLock(ctx, r.Owner.UUID); err != nil {
				return err
			}
			n, err := tx.WebhookCountByOwner(ctx, r.Owner.UUID)
			if err != nil {
				return err
			}
			if n >= int64(s.cfg.MaxPerUser) {
				return fmt.Errorf("%w: a user holds at most %d webhooks (CHATD_MAX_WEBHOOKS_PER_USER)", ErrLimitReached, s.cfg.MaxPerUser)
			}
		}
		var err error
		w, err = tx.WebhookInsert(ctx, w)
		return err
	})
	return w, err
}

// Visible reports whether a user sees (and may delete) w: its owner, or
// an admin.
func Visible(w store.Webhook, user uuid.UUID, admin bool) bool {
	return admin || (w.OwnerID.Valid && w.OwnerID.UUID == user)
}

// Get reads a webhook the user sees.
func (s *Service) Get(ctx context.Context, id, user uuid.UUID, admin bool) (store.Webhook, error) {
	var w store.Webhook
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		w, err = tx.WebhookGet(ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && !Visible(w, user, admin)) {
		return store.Webhook{}, ErrNotFound
	}
	return w, err
}

// Delete removes a webhook the user sees.
func (s *Service) Delete(ctx context.Context, id, user uuid.UUID, admin bool) error {
	if _, err := s.Get(ctx, id, user, admin); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.WebhookDelete(ctx, id)
		return err
	})
}

// CheckURL refuses what is not an absolute http(s) URL, and, unless
// allowPrivate, a literal private or loopback address or localhost. Names
// are checked again at dial time, on the address they resolve to.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return &InputError{Field: "url", Detail: "must be an absolute http or https URL without credentials"}
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return &InputError{Field: "url", Detail: ErrPrivateAddress.Error()}
	}
	if ip, err := netip.ParseAddr(host); err == nil && !Public(ip) {
		return &InputError{Field: "url", Detail: ErrPrivateAddress.Error()}
	}
	return nil
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public reports whether ip is a public unicast address: not loopback,
// private, link-local, shared (CGNAT), multicast or unspecified.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() &&
		!ip.IsInterfaceLocalMulticast() && !ip.IsMulticast() && !ip.IsUnspecified() && !cgnat.Contains(ip)
}
