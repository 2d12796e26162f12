// Package chatstatetest is test support for code built on the state
// machine: Seed brings a new chat into any execution state through the
// real transitions, so the tests of chatstate, api and worker start from
// the same chats instead of each keeping its own recipe.
package chatstatetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Texts of the messages a seeded chat holds.
const (
	// FirstText is the user message a chat is created with.
	FirstText = "hello"
	// ErrorMessage is the last error of a seeded E0, E1, XE0 or XE1 chat.
	ErrorMessage = "boom"
	// ActionTool is the dynamic tool an A0 or A1 chat (or a Pending one)
	// waits on.
	ActionTool = "ask_user"
	// Title is the title of a seeded chat when its Spec sets none.
	Title = "seeded chat"
)

// Spec describes a chat to build. Only Owner and State are required; the
// zero values of the rest give the shortest way into State: created with
// FirstText and acquired by Worker, one queued message in the queued
// states, one pending ActionTool call in requires_action, ErrorMessage in
// error, archived last in the archived states.
type Spec struct {
	State chatstate.State
	Owner uuid.UUID // the chat's owner and the author of its messages
	// Worker acquires the chat (a new id when zero), so R, I and A chats are
	// owned and single transitions apply to them.
	Worker uuid.UUID
	// Runner is the runner id of that acquisition (a new id when zero).
	Runner uuid.UUID
	// DynamicTools are declared on the chat (none when empty); a worker
	// test declares ActionTool to see its requires_action handled as in
	// production.
	DynamicTools []sdk.DynamicTool
	Title        string // Title when empty
	// TitleSource is where the title came from (user when empty).
	TitleSource store.TitleSource
	Labels      map[string]string
	// Empty creates W or XW without any message (never acquired).
	Empty bool
	// Turns is the number of assistant replies ("reply N") in history; each
	// turn but the first starts with a user message "turn N".
	Turns int
	// Queued is the number of queued messages ("queued N"); at least one
	// in R1, I1, A1, E1 and XE1.
	Queued int
	// Pending leaves an unanswered ActionTool call in the current turn (A0
	// and A1 always have one).
	Pending bool
	// Approval, in A0 or A1, makes the chat wait on a person's approval of
	// this many outstanding calls (EnterApproval) instead of a client's
	// result; the step then calls ActionTool that many times.
	Approval int
	// Unowned abandons the chat once it is in State (before archiving, in
	// the archived states).
	Unowned bool
	// Compact reaches R0 or R1 from E0 or E1 by RequestCompaction, so the
	// chat carries a compaction request.
	Compact bool
	// Base is, for Invalid, the state the chat is in when it is archived
	// behind the machine's back (R0 when empty): no transition produces
	// Invalid, so it is a direct store write, what a row written before the
	// state machine can look like.
	Base chatstate.State
}

// Chat is a seeded chat.
type Chat struct {
	ID    uuid.UUID
	State chatstate.State
	Row   store.Chat // the row after seeding; zero for N
	// UserMessage is the first user message (0 when there is none).
	UserMessage int64
	// Queued are the queued message ids, oldest first.
	Queued []int64
	// Call is the pending ActionTool call ("" when there is none).
	Call string
}

// Seed builds a new chat as spec says through m (Invalid with one direct
// write to s, m's store) and fails t unless the chat lands in spec.State.
// For N it returns an id no chat has.
func Seed(t testing.TB, m *chatstate.Machine, s store.Store, spec Spec) Chat {
	t.Helper()
	if spec.Owner == uuid.Nil {
		t.Fatalf("chatstatetest.Seed: Spec.Owner is required")
	}
	if spec.State == chatstate.StateN {
		return Chat{ID: uuid.New(), State: chatstate.StateN}
	}
	if spec.Worker == uuid.Nil {
		spec.Worker = uuid.New()
	}
	if spec.Runner == uuid.Nil {
		spec.Runner = uuid.New()
	}
	if spec.Title == "" {
		spec.Title = Title
	}
	if spec.TitleSource == "" {
		spec.TitleSource = store.TitleSourceUser
	}
	b := &builder{t: t, ctx: context.Background(), m: m, s: s, spec: spec}
	b.build(spec)
	return b.result()
}

// builder applies the transitions of one Seed call.
type builder struct {
	t    testing.TB
	ctx  context.Context
	m    *chatstate.Machine
	s    store.Store
	spec Spec
	id   uuid.UUID
	call string
}

func (b *builder) do(what string, fn func(tx *chatstate.Tx) error) {
	b.t.Helper()
	if err := b.m.Do(b.ctx, fn); err != nil {
		b.t.Fatalf("chatstatetest.Seed(%s): %s: %v", b.spec.State, what, err)
	}
}

func (b *builder) input(text string) chatstate.UserInput {
	return chatstate.UserInput{Content: sdk.Text(text), CreatedBy: uuid.NullUUID{UUID: b.spec.Owner, Valid: true}}
}

// unarchived is the state an archived state is archived from.
var unarchived = map[chatstate.State]chatstate.State{
	chatstate.StateXW:  chatstate.StateW,
	chatstate.StateXE0: chatstate.StateE0,
	chatstate.StateXE1: chatstate.StateE1,
}

func queuedState(st chatstate.State) bool {
	switch st {
	case chatstate.StateR1, chatstate.StateI1, chatstate.StateA1, chatstate.StateE1, chatstate.StateXE1:
		return true
	}
	return false
}

// build brings a new chat into sp.State; wrapping states (Invalid,
// archived, compacting) build their base first.
func (b *builder) build(sp Spec) {
	b.t.Helper()
	switch {
	case sp.State == chatstate.StateInvalid:
		base := sp
		base.State = sp.Base
		if base.State == "" {
			base.State = chatstate.StateR0
		}
		b.build(base)
		if err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.id, store.ChatPatch{Archived: store.Some(true)})
			return err
		}); err != nil {
			b.t.Fatalf("chatstatetest.Seed(%s): archive behind the machine: %v", sp.State, err)
		}
		return
	case sp.State.Archived():
		base := sp
		base.State = unarchived[sp.State]
		b.build(base)
		b.do("archive", func(tx *chatstate.Tx) error {
			_, err := tx.SetArchived(b.id, true)
			return err
		})
		return
	case sp.Compact:
		if sp.State != chatstate.StateR0 && sp.State != chatstate.StateR1 {
			b.t.Fatalf("chatstatetest.Seed: Compact needs R0 or R1, not %s", sp.State)
		}
		base := sp
		base.Compact, base.Unowned, base.Pending = false, false, false
		base.State = chatstate.StateE0
		if sp.State == chatstate.StateR1 {
			base.State = chatstate.StateE1
		}
		b.build(base)
		b.do("request compaction", func(tx *chatstate.Tx) error {
			_, err := tx.RequestCompaction(b.id)
			return err
		})
		if sp.Pending {
			// An error turn answers its calls, so the pending call comes
			// from the compaction's own turn: its worker's step.
			b.do("acquire", func(tx *chatstate.Tx) error {
				_, err := tx.Acquire(b.id, sp.Worker, sp.Runner)
				return err
			})
			b.call = "call-" + uuid.NewString()
			b.commit(toolCallStep(b.call))
		}
		b.abandonIf(sp.Unowned)
		return
	}
	if sp.Empty {
		if sp.State != chatstate.StateW || sp.Turns > 0 || sp.Queued > 0 || sp.Pending {
			b.t.Fatalf("chatstatetest.Seed: Empty is a W chat without history, not %+v", sp)
		}
		b.create(chatstate.UserInput{})
		return
	}
	b.create(b.input(FirstText))
	b.do("acquire", func(tx *chatstate.Tx) error {
		_, err := tx.Acquire(b.id, sp.Worker, sp.Runner)
		return err
	})
	for i := range sp.Turns {
		if i > 0 {
			b.finishTurn()
			b.send(fmt.Sprintf("turn %d", i+1))
		}
		b.commit(assistantStep(fmt.Sprintf("reply %d", i+1)))
	}
	queued := sp.Queued
	if queuedState(sp.State) && queued == 0 {
		queued = 1
	}
	for i := range queued {
		b.send(fmt.Sprintf("queued %d", i+1))
	}
	action := sp.State == chatstate.StateA0 || sp.State == chatstate.StateA1
	if sp.Pending || action {
		b.call = "call-" + uuid.NewString()
		ids := []string{b.call}
		for i := 1; i < sp.Approval; i++ {
			ids = append(ids, fmt.Sprintf("%s-%d", b.call, i+1))
		}
		b.commit(toolCallStep(ids...))
	}
	switch sp.State {
	case chatstate.StateW:
		b.finishTurn()
	case chatstate.StateI0, chatstate.StateI1:
		b.do("interrupt", func(tx *chatstate.Tx) error {
			_, err := tx.Interrupt(b.id)
			return err
		})
	case chatstate.StateA0, chatstate.StateA1:
		if sp.Approval > 0 {
			b.do("enter approval", func(tx *chatstate.Tx) error {
				calls, err := tx.OutstandingToolCalls(b.id)
				if err != nil {
					return err
				}
				var ask []sdk.ToolApproval
				for _, c := range calls {
					ask = append(ask, sdk.ToolApproval{
						ToolCallID: c.ID, ToolName: c.Name, Args: c.Args, Effect: store.EffectEffectful,
					})
				}
				_, err = tx.EnterApproval(b.id, ask)
				return err
			})
			break
		}
		b.do("enter requires_action", func(tx *chatstate.Tx) error {
			_, err := tx.EnterRequiresAction(b.id)
			return err
		})
	case chatstate.StateE0, chatstate.StateE1:
		b.do("finish with an error", func(tx *chatstate.Tx) error {
			_, err := tx.FinishError(b.id, sdk.ChatError{Message: ErrorMessage, Kind: sdk.ChatErrorGeneric})
			return err
		})
	case chatstate.StateR0, chatstate.StateR1:
	default:
		b.t.Fatalf("chatstatetest.Seed: unknown state %q", sp.State)
	}
	b.abandonIf(sp.Unowned)
}

func (b *builder) create(in chatstate.UserInput) {
	b.t.Helper()
	var tools json.RawMessage
	if len(b.spec.DynamicTools) > 0 {
		raw, err := json.Marshal(b.spec.DynamicTools)
		if err != nil {
			b.t.Fatalf("chatstatetest.Seed: encode dynamic tools: %v", err)
		}
		tools = raw
	}
	b.do("create", func(tx *chatstate.Tx) error {
		res, err := tx.Create(chatstate.CreateParams{
			OwnerID: b.spec.Owner, Title: b.spec.Title, TitleSource: b.spec.TitleSource, Labels: b.spec.Labels,
			DynamicTools: tools, Input: in,
		})
		b.id = res.Chat.ID
		return err
	})
}

func (b *builder) send(text string) {
	b.t.Helper()
	b.do("send "+text, func(tx *chatstate.Tx) error {
		_, err := tx.SendMessage(b.id, b.input(text), chatstate.BusyQueue)
		return err
	})
}

func (b *builder) commit(st chatstate.Step) {
	b.t.Helper()
	b.do("commit step", func(tx *chatstate.Tx) error {
		_, err := tx.CommitStep(b.id, st)
		return err
	})
}

func (b *builder) finishTurn() {
	b.t.Helper()
	b.do("finish turn", func(tx *chatstate.Tx) error {
		_, err := tx.FinishTurn(b.id)
		return err
	})
}

func (b *builder) abandonIf(unowned bool) {
	b.t.Helper()
	if !unowned {
		return
	}
	b.do("abandon", func(tx *chatstate.Tx) error {
		_, err := tx.Abandon(b.id)
		return err
	})
}

// result reads the chat back and checks that it is in the state asked for.
func (b *builder) result() Chat {
	b.t.Helper()
	c := Chat{ID: b.id, Call: b.call}
	err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		row, err := tx.ChatGet(b.ctx, b.id)
		if err != nil {
			return fmt.Errorf("get chat %s: %w", b.id, err)
		}
		queue, err := tx.QueueList(b.ctx, b.id)
		if err != nil {
			return fmt.Errorf("list queue of chat %s: %w", b.id, err)
		}
		msgs, err := tx.MessageList(b.ctx, b.id, store.MessageListParams{})
		if err != nil {
			return fmt.Errorf("list messages of chat %s: %w", b.id, err)
		}
		c.Row = row
		c.State = chatstate.Classify(true, row.Status, row.Archived, len(queue) > 0)
		for _, q := range queue {
			c.Queued = append(c.Queued, q.ID)
		}
		for _, m := range msgs {
			if m.Role == store.RoleUser {
				c.UserMessage = m.ID
				break
			}
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("chatstatetest.Seed(%s): the chat does not exist", b.spec.State)
	}
	if err != nil {
		b.t.Fatalf("chatstatetest.Seed(%s): %v", b.spec.State, err)
	}
	if c.State != b.spec.State {
		b.t.Fatalf("chatstatetest.Seed(%+v) landed in %s (status=%s archived=%v queued=%d)",
			b.spec, c.State, c.Row.Status, c.Row.Archived, len(c.Queued))
	}
	return c
}

// assistantStep is a plain assistant reply, as the worker commits it.
func assistantStep(text string) chatstate.Step {
	content, err := chatstate.EncodeParts(sdk.Text(text))
	if err != nil {
		panic(fmt.Sprintf("chatstatetest: encode reply: %v", err))
	}
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}

// toolCallStep is an assistant step that calls ActionTool, once per id.
func toolCallStep(callIDs ...string) chatstate.Step {
	parts := []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "let me check"}}
	for _, id := range callIDs {
		parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ToolName: ActionTool, Args: json.RawMessage(`{"q":1}`)})
	}
	content, err := chatstate.EncodeParts(parts)
	if err != nil {
		panic(fmt.Sprintf("chatstatetest: encode tool call: %v", err))
	}
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}
