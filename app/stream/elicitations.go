package stream

import (
	"context"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// The chat's MCP questions (elicitations, API.md "MCP elicitation") reach a
// viewer as elicitation_update events, so a client shows and clears them
// without polling. A question is no chat state: asking or answering one
// moves no version of the chat, so the stream reads the pending questions
// on their own hint (pubsub.ChannelElicitations), after every sync while
// the chat runs or questions are showing (a lost hint is made up for by
// the poller's next sync), and once after the bootstrap.

// Elicitations returns the elicitation_update event for the chat's
// pending questions when they differ from those last sent (none at
// first), else nil.
func (l *Loop) Elicitations(pending []sdk.Elicitation) *sdk.ChatStreamEvent {
	key := ""
	for _, q := range pending {
		key += q.ID.String() + " "
	}
	if key == l.questions {
		return nil
	}
	l.questions = key
	e := l.event(sdk.StreamElicitationUpdate)
	e.Elicitations = append([]sdk.Elicitation{}, pending...) // [] rather than null when none is left
	return &e
}

// asking reports whether the chat's questions may have changed without a
// hint reaching this viewer: the chat runs (questions are asked only
// during a tool call), or the viewer was last sent some.
func (l *Loop) asking() bool {
	return l.statusSet && (l.status == store.ChatStatusRunning || l.status == store.ChatStatusInterrupting) ||
		l.questions != ""
}

// readQuestions reads the chat's pending questions as the API shows them.
func readQuestions(ctx context.Context, s store.ReadStore, chatID uuid.UUID) ([]sdk.Elicitation, error) {
	var out []sdk.Elicitation
	err := s.ReadTx(ctx, func(tx store.Reader) error {
		pending, err := tx.ElicitationListPending(ctx, chatID)
		for _, e := range pending {
			out = append(out, chatstate.ElicitationOf(e))
		}
		return err
	})
	return out, err
}

// questions is one viewer's reading of its chat's questions.
type questions struct {
	s      *Server
	chatID uuid.UUID
	loop   *Loop
	w      sink
	// hint is signalled when the chat's questions changed.
	hint chan struct{}
}

// watchQuestions subscribes to the chat's question hints (before the
// bootstrap, so none is missed); stop unsubscribes.
func (s *Server) watchQuestions(ctx context.Context, chatID uuid.UUID, loop *Loop, w sink) (q *questions, stop func()) {
	q = &questions{s: s, chatID: chatID, loop: loop, w: w, hint: make(chan struct{}, 1)}
	stop, err := s.pubsub.Subscribe(ctx, pubsub.ChannelElicitations(chatID.String()), func([]byte) {
		select {
		case q.hint <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.log.Warn("stream: subscribe to questions failed; syncs still read them", "chat_id", chatID, "err", err)
		stop = func() {}
	}
	return q, stop
}

// sync reads the pending questions and sends an elicitation_update when
// they changed. A failed read is logged and left to the next hint or sync:
// the questions are not worth ending the stream for.
func (q *questions) sync(ctx context.Context) error {
	pending, err := readQuestions(ctx, q.s.store, q.chatID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q.s.log.Warn("stream: read the chat's questions", "chat_id", q.chatID, "err", err)
		return nil
	}
	if e := q.loop.Elicitations(pending); e != nil {
		return q.w.write(ctx, []sdk.ChatStreamEvent{*e})
	}
	return nil
}

// afterSync reads the questions again after a sync when they may have
// changed unannounced (asking).
func (q *questions) afterSync(ctx context.Context) error {
	if !q.loop.asking() {
		return nil
	}
	return q.sync(ctx)
}
