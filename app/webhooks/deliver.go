package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Delivery timing.
const (
	// RetryWindow is how long a delivery is retried before it is failed.
	RetryWindow = 24 * time.Hour
	// AttemptTimeout bounds one POST; a claimed attempt that never
	// finished (the replica died) is retried after it.
	AttemptTimeout = 15 * time.Second
	// firstBackoff doubles per attempt up to maxBackoff.
	firstBackoff = 10 * time.Second
	maxBackoff   = time.Hour
	// DefaultPoll bounds the wait between passes without a wake-up.
	DefaultPoll = 5 * time.Second
	batch       = 50
	parallel    = 8
)

// Sign is the Chatd-Signature of body: "sha256=" and the hex HMAC-SHA256
// of the body with the webhook's secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Backoff is the wait after a failed attempt (the first is attempt 1).
func Backoff(attempt int64) time.Duration {
	d := firstBackoff
	for i := int64(1); i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// DelivererConfig wires a Deliverer.
type DelivererConfig struct {
	Store store.Store
	Clock clock.Clock
	Log   *slog.Logger
	// AllowPrivate lets deliveries dial private and loopback addresses.
	AllowPrivate bool
	Poll         time.Duration
	// Client replaces the HTTP client (its dialer must do the address
	// check itself); nil: NewClient(AllowPrivate).
	Client *http.Client
}

// Deliverer POSTs due deliveries. Every replica runs one; a delivery's
// attempt is claimed in a transaction, so one replica makes it.
type Deliverer struct {
	cfg  DelivererConfig
	loop *clock.Loop
}

// NewDeliverer returns a stopped Deliverer.
func NewDeliverer(cfg DelivererConfig) *Deliverer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.AllowPrivate)
	}
	return &Deliverer{cfg: cfg, loop: clock.NewLoop(cfg.Clock)}
}

// NewClient is the HTTP client of deliveries: no proxy (it would hide the
// address), no redirects (a 3xx is a failed attempt), and unless
// allowPrivate a dialer that refuses private and loopback addresses after
// name resolution, so a name that resolves inside is refused too.
func NewClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !Public(ap.Addr()) {
				return fmt.Errorf("dial %s: %w", address, ErrPrivateAddress)
			}
			return nil
		}
	}
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       AttemptTimeout,
	}
}

// Wake makes a running loop look for due deliveries now (chatstate's
// OnOutbox).
func (d *Deliverer) Wake() { d.loop.Wake() }

// Start runs the loop until Stop or ctx ends.
func (d *Deliverer) Start(ctx context.Context) error { return d.loop.Start(ctx, d.pass) }

// Stop ends the loop and waits for it.
func (d *Deliverer) Stop() { d.loop.Stop() }

// pass makes the due attempts and says how long to wait for the next.
func (d *Deliverer) pass(ctx context.Context) time.Duration {
	n, err := d.RunDue(ctx)
	if err != nil && ctx.Err() == nil {
		d.cfg.Log.Warn("webhook deliveries", "err", err)
	}
	wait := d.cfg.Poll
	if n > 0 {
		wait = 0 // the next of each chat may be due now
	} else {
		var next time.Time
		var ok bool
		err := d.cfg.Store.ReadTx(ctx, func(tx store.Reader) error {
			var err error
			next, ok, err = tx.WebhookDeliveryNextDue(ctx)
			return err
		})
		if err == nil && ok {
			wait = min(wait, max(0, next.Sub(d.cfg.Clock.Now())))
		}
	}
	if err != nil {
		wait = max(wait, time.Second) // a failing store is not hammered
	}
	return wait
}

// RunDue makes one attempt at each due delivery (the oldest pending one
// of each webhook and chat) and reports how many it attempted.
func (d *Deliverer) RunDue(ctx context.Context) (int, error) {
	now := d.cfg.Clock.Now().UTC()
	var due []store.WebhookDelivery
	err := d.cfg.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		due, err = tx.WebhookDeliveryListDue(ctx, now, batch)
		return err
	})
	if err != nil {
		return 0, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		n    int
		sem  = make(chan struct{}, parallel)
	)
	for _, dl := range due {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			tried, err := d.attempt(ctx, dl, now)
			mu.Lock()
			defer mu.Unlock()
			if tried {
				n++
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return n, errors.Join(errs...)
}

// attempt claims one attempt of dl, POSTs it and records the outcome.
func (d *Deliverer) attempt(ctx context.Context, dl store.WebhookDelivery, now time.Time) (bool, error) {
	var (
		w       store.Webhook
		claimed bool
	)
	err := d.cfg.Store.InTx(ctx, func(tx store.Tx) error {
		var err error
		if w, err = tx.WebhookGet(ctx, dl.WebhookID); err != nil {
			return err
		}
		claimed, err = tx.WebhookDeliveryClaim(ctx, dl.Seq, dl.NextAttemptAt, now.Add(AttemptTimeout))
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && !claimed) {
		return false, nil // deleted, or another replica took it
	}
	if err != nil {
		return false, err
	}
	status, sendErr := d.post(ctx, w, dl)
	if ctx.Err() != nil {
		return true, ctx.Err() // the claim expires and the attempt is made again
	}
	at := d.cfg.Clock.Now().UTC()
	p := store.WebhookDeliveryPatch{LastStatus: store.Some(int64(status)), LastError: store.Some("")}
	switch {
	case sendErr == nil:
		p.Status, p.DeliveredAt = store.Some(store.WebhookDeliveryDelivered), store.Some(&at)
	case at.Sub(dl.CreatedAt) >= RetryWindow:
		p.Status, p.LastError = store.Some(store.WebhookDeliveryFailed), store.Some(sendErr.Error())
	default:
		p.NextAttemptAt, p.LastError = store.Some(at.Add(Backoff(dl.Attempts+1))), store.Some(sendErr.Error())
	}
	err = d.cfg.Store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.WebhookDeliveryUpdate(ctx, dl.Seq, p)
		return err
	})
	return true, err
}

// post sends one delivery; a 2xx answer is success.
func (d *Deliverer) post(ctx context.Context, w store.Webhook, dl store.WebhookDelivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(dl.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chatd-webhooks")
	req.Header.Set(sdk.HeaderWebhookEvent, dl.Event)
	req.Header.Set(sdk.HeaderWebhookDelivery, dl.ID.String())
	req.Header.Set(sdk.HeaderWebhookSignature, Sign(w.Secret, dl.Payload))
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
