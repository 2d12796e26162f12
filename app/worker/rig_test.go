package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// The internal tests drive the worker's pieces (runner iterations, the
// manager's sync and heartbeat ticks, title generation) one step at a
// time over a real store, with an in-process provider and a controlled
// clock. Nothing here starts the worker's loops: a test is the loop.

// providerCall is one call the fake provider received.
type providerCall struct {
	ctx context.Context
	req llm.Request
}

// fakeProvider records every call and blocks it until the test sends an
// answer or the call's context ends.
type fakeProvider struct {
	calls   chan providerCall
	answers chan providerResult
}

type providerResult struct {
	resp llm.Response
	err  error
}

var _ llm.Provider = (*fakeProvider)(nil)

func newFakeProvider() *fakeProvider {
	return &fakeProvider{calls: make(chan providerCall, 64), answers: make(chan providerResult, 64)}
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	p.calls <- providerCall{ctx: ctx, req: req}
	select {
	case res := <-p.answers:
		for _, part := range res.resp.Parts {
			if onPart != nil {
				onPart(part)
			}
		}
		return res.resp, res.err
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
}

// answer lets the next (or current) call finish with text.
func (p *fakeProvider) answer(text string) {
	p.answers <- providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}}, FinishReason: "stop"}}
}

// fail lets the next (or current) call fail with err.
func (p *fakeProvider) fail(err error) { p.answers <- providerResult{err: err} }

// next waits for the next call.
func (p *fakeProvider) next(t testing.TB) providerCall {
	t.Helper()
	select {
	case c := <-p.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the provider was not called")
		return providerCall{}
	}
}

// oneModel resolves every id to the same model.
type oneModel struct{ m Model }

func (o oneModel) Resolve(uuid.NullUUID) (Model, error) { return o.m, nil }

// fixture is a worker over a store that a test steps by hand.
type fixture struct {
	t        testing.TB
	ctx      context.Context
	store    store.Store
	pubsub   *pubsub.Memory
	machine  *chatstate.Machine
	clock    *clock.Fake
	provider *fakeProvider
	w        *Worker
	owner    uuid.UUID
}

const rigActionTimeout = time.Minute

// setupOn builds a fixture over s; nothing runs until the test steps it.
func setupOn(t testing.TB, s store.Store, cfg Config) *fixture {
	t.Helper()
	return setupAt(t, s, cfg, time.Now().UTC().Truncate(time.Millisecond), nil)
}

// setupWith is setupOn with the worker's deps adjusted by deps (server
// tools, an MCP source) before the worker is built.
func setupWith(t testing.TB, s store.Store, cfg Config, deps func(*Deps)) *fixture {
	t.Helper()
	return setupAt(t, s, cfg, time.Now().UTC().Truncate(time.Millisecond), deps)
}

// setupAt is setupWith with the fixture's clock starting at start.
func setupAt(t testing.TB, s store.Store, cfg Config, start time.Time, deps func(*Deps)) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := &fixture{
		t: t, ctx: ctx, store: s, pubsub: pubsub.NewMemory(),
		clock:    clock.NewFake(start),
		provider: newFakeProvider(),
	}
	g.machine = chatstate.New(s, g.pubsub, chatstate.Config{
		Clock: g.clock, RequiresActionTimeout: rigActionTimeout, LeaseTimeout: leaseTimeoutIf(cfg),
	})
	d := Deps{
		Machine: g.machine, Store: s, Pubsub: g.pubsub, Buffer: partbuf.New(partbuf.Config{}),
		Models: oneModel{Model{ID: uuid.New(), Provider: g.provider, Name: "fake-model"}},
		Clock:  g.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if deps != nil {
		deps(&d)
	}
	g.w = New(cfg, d)
	// Runners spawned by AcquirePass run on ctx; stop them before the
	// store closes (cleanups run last-in first-out).
	t.Cleanup(func() { cancel(); g.w.manager.wait() })
	g.owner = uuid.New()
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: g.owner, Name: "owner-" + g.owner.String()[:8], Now: g.clock.Now()})
		return err
	}))
	return g
}

func leaseTimeoutIf(cfg Config) time.Duration {
	if !cfg.Leases {
		return 0
	}
	return cfg.withDefaults().LeaseTimeout
}

// do applies fn as one transition bundle.
func (g *fixture) do(fn func(t *chatstate.Tx) error) {
	g.t.Helper()
	require.NoError(g.t, g.machine.Do(g.ctx, fn))
}

// create makes a chat; a non-empty text starts it running.
func (g *fixture) create(text string, tools ...sdk.DynamicTool) uuid.UUID {
	g.t.Helper()
	p := chatstate.CreateParams{OwnerID: g.owner, Title: "t", TitleSource: store.TitleSourceUser}
	if text != "" {
		p.Input = chatstate.UserInput{Content: sdk.Text(text)}
	}
	if len(tools) > 0 {
		raw, err := json.Marshal(tools)
		require.NoError(g.t, err)
		p.DynamicTools = raw
	}
	var id uuid.UUID
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Create(p)
		id = res.Chat.ID
		return err
	})
	return id
}

// acquire gives the chat to the fixture's worker under a new runner id.
func (g *fixture) acquire(id uuid.UUID) (uuid.UUID, store.Chat) {
	g.t.Helper()
	rid := uuid.New()
	var c store.Chat
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Acquire(id, g.w.id, rid)
		c = res.Chat
		return err
	})
	return rid, c
}

// seed brings a new chat into st with chatstatetest.Seed, acquired by the
// rig's worker; it returns the chat and the runner id of the acquisition.
func (g *fixture) seed(sp chatstatetest.Spec) (chatstatetest.Chat, uuid.UUID) {
	g.t.Helper()
	sp.Owner, sp.Worker = g.owner, g.w.id
	if sp.Runner == uuid.Nil {
		sp.Runner = uuid.New()
	}
	return chatstatetest.Seed(g.t, g.machine, g.store, sp), sp.Runner
}

func (g *fixture) chat(id uuid.UUID) store.Chat {
	g.t.Helper()
	var c store.Chat
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(g.ctx, id)
		return err
	}))
	return c
}

// peek reads a chat for a polled condition: it never fails the test (a
// condition runs on another goroutine and may outlive the test).
func (g *fixture) peek(id uuid.UUID) store.Chat {
	var c store.Chat
	_ = g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(g.ctx, id)
		return err
	})
	return c
}

func (g *fixture) event(id uuid.UUID) event { return eventFromChat(g.chat(id)) }

func (g *fixture) messages(id uuid.UUID) []store.Message {
	g.t.Helper()
	var ms []store.Message
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		ms, err = tx.MessageList(g.ctx, id, store.MessageListParams{})
		return err
	}))
	return ms
}

// peekMessages reads a chat's messages for a polled condition.
func (g *fixture) peekMessages(id uuid.UUID) []store.Message {
	var ms []store.Message
	_ = g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		ms, err = tx.MessageList(g.ctx, id, store.MessageListParams{})
		return err
	})
	return ms
}

// runner returns a runner that the test drives by calling process; its
// stop (a cleanup request) cancels the returned context.
func (g *fixture) runner(chatID, runnerID uuid.UUID) (*runner, context.Context) {
	g.t.Helper()
	r := newRunner(g.w, store.Chat{ID: chatID}, runnerID)
	ctx, cancel := context.WithCancel(g.ctx)
	r.cancel = cancel
	g.t.Cleanup(func() {
		cancel()
		r.wg.Wait()
	})
	return r, ctx
}

// eventually polls cond with a short tick.
func eventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 2*time.Millisecond, append([]any{msg}, args...)...)
}

// partsOf decodes a message's content.
func partsOf(t testing.TB, m store.Message) []sdk.ChatMessagePart {
	t.Helper()
	var parts []sdk.ChatMessagePart
	require.NoError(t, json.Unmarshal(m.Content, &parts))
	return parts
}

// lastUserText is the text of the last user message of a prompt.
func lastUserText(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == llm.RoleUser {
			var s string
			for _, p := range m.Parts {
				s += p.Text
			}
			return s
		}
	}
	return ""
}
