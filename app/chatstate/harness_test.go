package chatstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// published is one notification the machine sent.
type published struct {
	Channel string
	Payload []byte
}

// recorder is a Publisher that remembers what was published.
type recorder struct {
	mu   sync.Mutex
	msgs []published
	// watch holds the chat:watch:{owner} publishes apart, so the tests of
	// chat:update and chat:ownership see exactly those; TestWatchChannel
	// checks the watch channel.
	watch []published
}

func (r *recorder) Publish(_ context.Context, channel string, payload []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := published{channel, append([]byte(nil), payload...)}
	if strings.HasPrefix(channel, "chat:watch:") {
		r.watch = append(r.watch, p)
		return nil
	}
	r.msgs = append(r.msgs, p)
	return nil
}

// takeWatch returns and forgets the chat:watch publishes so far.
func (r *recorder) takeWatch() []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.watch
	r.watch = nil
	return out
}

// take returns and forgets what was published so far.
func (r *recorder) take() []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	return out
}

// fixture is what a chatstate test needs: a machine over a real store, a
// recorder for its notifications, a user and a controllable clock.
type fixture struct {
	ctx    context.Context
	s      store.Store
	m      *chatstate.Machine
	pub    *recorder
	user   store.User
	worker uuid.UUID
	fake   *clock.Fake
}

func setup(t testing.TB, newStore func(t testing.TB) store.Store) *fixture {
	t.Helper()
	f := &fixture{
		ctx: context.Background(), s: newStore(t), pub: &recorder{}, worker: uuid.New(),
		fake: clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)),
	}
	f.m = chatstate.New(f.s, f.pub, chatstate.Config{Clock: f.fake, QueueLimit: 5, LeaseTimeout: 30 * time.Second})
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		var err error
		f.user, err = tx.UserInsert(f.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: f.clock()})
		return err
	}))
	return f
}

func (f *fixture) clock() time.Time { return f.fake.Now() }

func (f *fixture) advance(d time.Duration) { f.fake.Advance(d) }

// do runs one transition bundle and fails the test on error.
func (f *fixture) do(t testing.TB, fn func(tx *chatstate.Tx) error) {
	t.Helper()
	require.NoError(t, f.m.Do(f.ctx, fn))
}

func text(s string) []sdk.ChatMessagePart {
	return []sdk.ChatMessagePart{{Type: sdk.PartText, Text: s}}
}

func (f *fixture) input(s string) chatstate.UserInput {
	return chatstate.UserInput{Content: text(s), CreatedBy: uuid.NullUUID{UUID: f.user.ID, Valid: true}}
}

// create makes a chat; an empty first message lands it in W.
func (f *fixture) create(t testing.TB, first string) uuid.UUID {
	t.Helper()
	p := chatstate.CreateParams{OwnerID: f.user.ID, Title: "t"}
	if first != "" {
		p.Input = f.input(first)
	}
	var id uuid.UUID
	f.do(t, func(tx *chatstate.Tx) error {
		res, err := tx.Create(p)
		id = res.Chat.ID
		return err
	})
	return id
}

func (f *fixture) acquire(t testing.TB, id uuid.UUID) {
	t.Helper()
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.Acquire(id, f.worker, uuid.New())
		return err
	})
}

// toolCallStep is an assistant step that calls one (dynamic) tool.
func toolCallStep(callID, tool string) chatstate.Step {
	content, _ := chatstate.EncodeParts([]sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "let me check"},
		{Type: sdk.PartToolCall, ToolCallID: callID, ToolName: tool, Args: json.RawMessage(`{"q":1}`)},
	})
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}

// assistantStep is a plain assistant reply.
func assistantStep(s string) chatstate.Step {
	content, _ := chatstate.EncodeParts(text(s))
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}

// seed brings a new chat into st with chatstatetest.Seed; W and XW are
// created without any message. Running, interrupting and requires_action
// chats are owned by f.worker.
func (f *fixture) seed(t testing.TB, st chatstate.State) uuid.UUID {
	t.Helper()
	empty := st == chatstate.StateW || st == chatstate.StateXW
	return f.build(t, chatstatetest.Spec{State: st, Empty: empty}).ID
}

// build seeds a chat of f.user's as sp says (acquired by f.worker).
func (f *fixture) build(t testing.TB, sp chatstatetest.Spec) chatstatetest.Chat {
	t.Helper()
	sp.Owner, sp.Worker = f.user.ID, f.worker
	return chatstatetest.Seed(t, f.m, f.s, sp)
}

// snapshot is everything a transition may change, for "changed nothing" checks.
type snapshot struct {
	Exists   bool
	Chat     store.Chat
	State    chatstate.State
	Messages []store.Message
	Queue    []store.QueuedMessage
}

func (f *fixture) snap(t testing.TB, id uuid.UUID) snapshot {
	t.Helper()
	var s snapshot
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		c, err := tx.ChatGet(f.ctx, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				s.State = chatstate.StateN
				return nil
			}
			return err
		}
		s.Exists, s.Chat = true, c
		if s.Messages, err = tx.MessageList(f.ctx, id, store.MessageListParams{IncludeDeleted: true}); err != nil {
			return err
		}
		if s.Queue, err = tx.QueueList(f.ctx, id); err != nil {
			return err
		}
		s.State = chatstate.Classify(true, c.Status, c.Archived, len(s.Queue) > 0)
		return nil
	}))
	return s
}

// active returns the non-deleted messages of a snapshot.
func (s snapshot) active() []store.Message {
	var out []store.Message
	for _, m := range s.Messages {
		if !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

// partsOf decodes a message's content.
func partsOf(t testing.TB, m store.Message) []sdk.ChatMessagePart {
	t.Helper()
	var parts []sdk.ChatMessagePart
	require.NoError(t, json.Unmarshal(m.Content, &parts))
	return parts
}
