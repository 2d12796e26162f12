package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/webhooks"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

var start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// receiver is a webhook endpoint that is down (503) until up is set and
// records what it accepted.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	up     bool
	got    []sdk.WebhookEvent
	tries  int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	require.NoError(rc.t, err)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.tries++
	if !rc.up {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	require.Equal(rc.t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(rc.t, webhooks.Sign(rc.secret, body), r.Header.Get(sdk.HeaderWebhookSignature), "the signature verifies")
	var ev sdk.WebhookEvent
	require.NoError(rc.t, json.Unmarshal(body, &ev))
	require.Equal(rc.t, ev.Event, r.Header.Get(sdk.HeaderWebhookEvent))
	require.Equal(rc.t, ev.ID.String(), r.Header.Get(sdk.HeaderWebhookDelivery))
	rc.got = append(rc.got, ev)
	w.WriteHeader(http.StatusNoContent)
}

type rig struct {
	ctx   context.Context
	s     store.Store
	clock *clock.Fake
	m     *chatstate.Machine
	user  store.User
}

func newRig(t *testing.T, s store.Store) *rig {
	c := clock.NewFake(start)
	r := &rig{ctx: context.Background(), s: s, clock: c, m: chatstate.New(s, pubsub.NewMemory(), chatstate.Config{Clock: c})}
	require.NoError(t, s.InTx(r.ctx, func(tx store.Tx) error {
		var err error
		r.user, err = tx.UserInsert(r.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: c.Now()})
		return err
	}))
	return r
}

// turn runs one turn of chat (created on first use) to its end.
func (r *rig) turn(t *testing.T, chat *uuid.UUID, text string) {
	t.Helper()
	require.NoError(t, r.m.Do(r.ctx, func(tx *chatstate.Tx) error {
		in := chatstate.UserInput{Content: sdk.Text(text), CreatedBy: uuid.NullUUID{UUID: r.user.ID, Valid: true}}
		if *chat == uuid.Nil {
			res, err := tx.Create(chatstate.CreateParams{OwnerID: r.user.ID, Input: in})
			*chat = res.Chat.ID
			return err
		}
		_, err := tx.SendMessage(*chat, in, chatstate.BusyQueue)
		return err
	}))
	require.NoError(t, r.m.Do(r.ctx, func(tx *chatstate.Tx) error { _, err := tx.FinishTurn(*chat); return err }))
	r.clock.Advance(time.Second)
}

func TestReceiverDownGetsEveryDeliveryInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newRig(t, newStore(t))
		rc := &receiver{t: t, secret: "shh"}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		svc := webhooks.New(r.s, r.clock, webhooks.Config{AllowPrivate: true})
		w, err := svc.Create(r.ctx, webhooks.Registration{URL: srv.URL, Events: []string{sdk.EventTurnCompleted}, Secret: "shh",
			Owner: uuid.NullUUID{UUID: r.user.ID, Valid: true}, CreatedBy: r.user.ID})
		require.NoError(t, err)
		d := webhooks.NewDeliverer(webhooks.DelivererConfig{Store: r.s, Clock: r.clock, AllowPrivate: true})

		var a, b uuid.UUID
		for i, chat := range []*uuid.UUID{&a, &b, &a, &a, &b} {
			r.turn(t, chat, "turn "+string(rune('0'+i)))
		}
		// Down for an hour: every attempt fails, each chat retries only its
		// oldest delivery.
		for range 12 {
			_, err := d.RunDue(r.ctx)
			require.NoError(t, err)
			r.clock.Advance(5 * time.Minute)
		}
		require.Empty(t, rc.got)
		require.GreaterOrEqual(t, rc.tries, 2*4, "retried with backoff")
		rc.mu.Lock()
		rc.up = true
		rc.mu.Unlock()
		for range 10 {
			r.clock.Advance(time.Hour)
			_, err := d.RunDue(r.ctx)
			require.NoError(t, err)
		}
		var order []uuid.UUID
		perChat := map[uuid.UUID][]time.Time{}
		for _, ev := range rc.got {
			order = append(order, ev.ID)
			perChat[ev.ChatID] = append(perChat[ev.ChatID], ev.OccurredAt)
		}
		require.Len(t, rc.got, 5, "every delivery, once")
		require.Len(t, perChat[a], 3)
		require.Len(t, perChat[b], 2)
		for _, times := range perChat {
			for i := 1; i < len(times); i++ {
				require.True(t, times[i-1].Before(times[i]), "order per chat kept")
			}
		}
		var ds []store.WebhookDelivery
		require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
			ds, err = tx.WebhookDeliveryList(r.ctx, w.ID, 10)
			return err
		}))
		for _, dl := range ds {
			require.Equal(t, store.WebhookDeliveryDelivered, dl.Status)
			require.Contains(t, order, dl.ID)
		}
	})
}

func TestDeliveryGivesUpAfterTheRetryWindow(t *testing.T) {
	t.Parallel()
	r := newRig(t, dbtest.NewSQLite(t))
	rc := &receiver{t: t, secret: "shh"}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	svc := webhooks.New(r.s, r.clock, webhooks.Config{AllowPrivate: true})
	w, err := svc.Create(r.ctx, webhooks.Registration{URL: srv.URL, Events: []string{sdk.EventTurnCompleted}, Secret: "shh",
		Owner: uuid.NullUUID{UUID: r.user.ID, Valid: true}, CreatedBy: r.user.ID})
	require.NoError(t, err)
	d := webhooks.NewDeliverer(webhooks.DelivererConfig{Store: r.s, Clock: r.clock, AllowPrivate: true})
	var chat uuid.UUID
	r.turn(t, &chat, "hello")
	for range 30 {
		_, err := d.RunDue(r.ctx)
		require.NoError(t, err)
		r.clock.Advance(time.Hour)
	}
	var ds []store.WebhookDelivery
	require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
		ds, err = tx.WebhookDeliveryList(r.ctx, w.ID, 10)
		return err
	}))
	require.Len(t, ds, 1)
	require.Equal(t, store.WebhookDeliveryFailed, ds[0].Status)
	require.Contains(t, ds[0].LastError, "503")
}

// TestPrivateAddressRefused: a literal loopback URL is refused when it is
// registered, and an address that is only found private when dialled (as
// a name resolving to it would be) is refused at dial time.
func TestPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, dbtest.NewSQLite(t))
	svc := webhooks.New(r.s, r.clock, webhooks.Config{})
	for _, u := range []string{"http://127.0.0.1:9/x", "http://[::1]/", "http://10.0.0.8/", "http://169.254.169.254/latest", "http://localhost:8080/", "ftp://example.com/"} {
		_, err := svc.Create(r.ctx, webhooks.Registration{URL: u, Events: []string{sdk.EventTurnCompleted}, Owner: uuid.NullUUID{UUID: r.user.ID, Valid: true}})
		var ie *webhooks.InputError
		require.ErrorAs(t, err, &ie, u)
	}
	rc := &receiver{t: t, secret: "shh", up: true}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	// Stored as if its name had passed the check (a DNS name resolving to
	// loopback): the dialer still refuses it.
	var w store.Webhook
	require.NoError(t, r.s.InTx(r.ctx, func(tx store.Tx) error {
		var err error
		w, err = tx.WebhookInsert(r.ctx, store.Webhook{ID: uuid.New(), OwnerID: uuid.NullUUID{UUID: r.user.ID, Valid: true}, URL: srv.URL,
			Events: []string{sdk.EventTurnCompleted}, Secret: "shh", CreatedBy: r.user.ID, CreatedAt: r.clock.Now()})
		return err
	}))
	d := webhooks.NewDeliverer(webhooks.DelivererConfig{Store: r.s, Clock: r.clock})
	var chat uuid.UUID
	r.turn(t, &chat, "hello")
	n, err := d.RunDue(r.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, rc.tries, "nothing reached the loopback receiver")
	var ds []store.WebhookDelivery
	require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
		ds, err = tx.WebhookDeliveryList(r.ctx, w.ID, 10)
		return err
	}))
	require.Equal(t, store.WebhookDeliveryPending, ds[0].Status)
	require.Contains(t, ds[0].LastError, "private or loopback")
}
