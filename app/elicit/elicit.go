// Package elicit turns an MCP server's question to a person (MCP
// elicitation/create, asked during a tools/call) into a durable pending
// question on the chat, waits for the answer given through the API, and
// hands it back to the server.
//
// The question is a row (chatstate.AskElicitation); the process that holds
// the server's request renews its hold while it waits, and answers
// "cancel" when the question times out or the tool call ends. A question
// whose holder is gone (a restart) is answered "cancel" by the sweep of
// any replica (Run); the tool call then follows the journal's rules like
// any call a crash interrupted. Answers reach the waiting replica as a
// pubsub hint and, should the hint be lost, by its periodic re-read.
package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	// DefaultTimeout is how long a question waits for its answer before
	// it is answered "cancel".
	DefaultTimeout = 10 * time.Minute
	// DefaultHold is how long a question outlives its holder's last
	// renewal; the holder renews it three times as often.
	DefaultHold = 30 * time.Second
)

// Config are the service's settings.
type Config struct {
	Timeout time.Duration
	Hold    time.Duration
}

// Service asks questions and delivers their answers.
type Service struct {
	machine *chatstate.Machine
	store   store.Store
	pub     pubsub.Pubsub
	clock   clock.Clock
	log     *slog.Logger
	cfg     Config
	slots   Slots
}

// Slots admits a chat back into the concurrent agent limit after its
// question was answered (worker.Worker): while a question waits its chat
// holds no slot (chatstate.AskElicitation), like a chat in
// requires_action. ResumeSlot reports false when the chat's pool is full.
type Slots interface {
	ResumeSlot(ctx context.Context, chatID, elicitationID uuid.UUID) (bool, error)
}

// UseSlots sets the admission of answered questions' chats; before it
// (and without it) they take their slot back unchecked. Call it before
// the first Ask.
func (s *Service) UseSlots(sl Slots) { s.slots = sl }

// New returns a service; zero Config fields take the defaults.
func New(m *chatstate.Machine, s store.Store, pub pubsub.Pubsub, clk clock.Clock, log *slog.Logger, cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Hold <= 0 {
		cfg.Hold = DefaultHold
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{machine: m, store: s, pub: pub, clock: clk, log: log, cfg: cfg}
}

// channel carries the hint that a question was answered.
func channel(id uuid.UUID) string { return "mcp:elicitation:" + id.String() }

// Question is what a server asks, for the chat and tool call that ran it.
type Question struct {
	ChatID     uuid.UUID
	ToolCallID string
	Server     string
	Mode       string
	Message    string
	Schema     json.RawMessage
	URL        string
}

// Answer is the person's answer.
type Answer struct {
	Action  string
	Content map[string]any
}

// Ask records q and waits for its answer, the chat holding no slot of the
// concurrent agent limit meanwhile; once answered it waits for a slot
// (Slots) before it returns. A timeout answers "cancel"; a cancelled ctx
// (the tool call ended) records "cancel", gives the slot back unchecked
// and returns the context's error.
func (s *Service) Ask(ctx context.Context, q Question) (Answer, error) {
	now := s.clock.Now()
	row := store.Elicitation{
		ID: uuid.New(), ChatID: q.ChatID, ToolCallID: q.ToolCallID, Server: q.Server, Mode: q.Mode,
		Message: q.Message, Schema: q.Schema, URL: q.URL, HeldUntil: now.Add(s.cfg.Hold),
	}
	wake := make(chan struct{}, 1)
	unsubscribe, err := s.pub.Subscribe(ctx, channel(row.ID), func([]byte) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.log.Warn("subscribe to elicitation answers; polling only", "err", err)
		unsubscribe = func() {}
	}
	defer unsubscribe()
	if err := s.machine.Do(ctx, func(t *chatstate.Tx) error {
		var err error
		row, err = t.AskElicitation(row)
		return err
	}); err != nil {
		return Answer{}, fmt.Errorf("record elicitation: %w", err)
	}
	s.notifyChat(ctx, row)
	timeout := s.clock.NewTimer(s.cfg.Timeout)
	defer timeout.Stop()
	tick := s.clock.NewTicker(s.cfg.Hold / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.cancel(row.ID, true)
			return Answer{}, ctx.Err()
		case <-timeout.C():
			s.cancel(row.ID, false)
		case <-tick.C():
			s.renew(ctx, row.ID)
		case <-wake:
		}
		var e store.Elicitation
		err := s.store.ReadTx(ctx, func(tx store.Reader) error {
			var err error
			e, err = tx.ElicitationGet(ctx, row.ID)
			return err
		})
		switch {
		case errors.Is(err, store.ErrNotFound):
			return Answer{Action: sdk.ElicitationCancel}, nil // the chat was deleted
		case err != nil:
			if ctx.Err() == nil {
				s.log.Warn("read elicitation", "elicitation_id", row.ID, "err", err)
			}
			continue
		case e.State == store.ElicitationPending:
			continue
		}
		a := Answer{Action: e.State}
		if e.State == store.ElicitationAccept && e.Content != nil {
			if err := json.Unmarshal(e.Content, &a.Content); err != nil {
				return Answer{}, fmt.Errorf("elicitation %s: content: %w", e.ID, err)
			}
		}
		if err := s.resume(ctx, e, tick); err != nil {
			return Answer{}, err
		}
		return a, nil
	}
}

// renew extends the hold of the question this process waits on.
func (s *Service) renew(ctx context.Context, id uuid.UUID) {
	if err := s.machine.Do(ctx, func(t *chatstate.Tx) error {
		return t.RenewElicitations([]uuid.UUID{id}, s.clock.Now().Add(s.cfg.Hold))
	}); err != nil && ctx.Err() == nil {
		s.log.Warn("renew elicitation", "elicitation_id", id, "err", err)
	}
}

// resume takes back the slot an answered question's chat released: the
// worker admits it when its pool has room, and otherwise it waits for a
// slot to free (a chat:ownership hint, or the renewal tick: hints may be
// lost), renewing the question's hold so no sweep ends the release. A
// cancelled ctx gives the slot back unchecked (the tool call ended).
func (s *Service) resume(ctx context.Context, e store.Elicitation, tick clock.Ticker) error {
	if !e.SlotRunnerID.Valid {
		return nil
	}
	if s.slots == nil {
		s.release(e.ID)
		return nil
	}
	freed := make(chan struct{}, 1)
	unsubscribe, err := s.pub.Subscribe(ctx, pubsub.ChannelOwnership, func([]byte) {
		select {
		case freed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.log.Warn("subscribe to chat ownership; polling only", "err", err)
		unsubscribe = func() {}
	}
	defer unsubscribe()
	for {
		ok, err := s.slots.ResumeSlot(ctx, e.ChatID, e.ID)
		switch {
		case ok:
			return nil
		case err != nil && ctx.Err() == nil:
			s.log.Warn("resume the slot of an answered elicitation", "elicitation_id", e.ID, "err", err)
		case err == nil:
			s.log.Debug("answered elicitation waits for a slot", "chat_id", e.ChatID, "elicitation_id", e.ID)
		}
		select {
		case <-ctx.Done():
			s.release(e.ID)
			return ctx.Err()
		case <-tick.C():
			s.renew(ctx, e.ID)
		case <-freed:
		}
	}
}

// release ends a question's slot release without an admission check.
func (s *Service) release(id uuid.UUID) {
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := s.machine.Do(ctx, func(t *chatstate.Tx) error { return t.ResumeElicitation(id) }); err != nil {
		s.log.Warn("end the slot release of an elicitation", "elicitation_id", id, "err", err)
	}
}

// cancel answers a question "cancel" unless it was answered meanwhile;
// release also ends its slot release (the tool call ended: the chat counts
// again whatever the limit says, as an interrupted turn briefly does).
func (s *Service) cancel(id uuid.UUID, release bool) {
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	var (
		chat      uuid.UUID
		cancelled bool
	)
	err := s.machine.Do(ctx, func(t *chatstate.Tx) error {
		e, err := t.Reader().ElicitationGet(ctx, id)
		if err != nil {
			return err
		}
		chat = e.ChatID
		if release {
			if err := t.ResumeElicitation(id); err != nil {
				return err
			}
		}
		if e.State != store.ElicitationPending {
			return nil
		}
		_, err = t.AnswerElicitation(e.ChatID, sdk.ElicitationResponse{ElicitationID: id, Action: sdk.ElicitationCancel})
		cancelled = err == nil
		return err
	})
	switch {
	case err == nil:
		if cancelled {
			s.notifyChat(ctx, store.Elicitation{ID: id, ChatID: chat})
		}
	case errors.Is(err, chatstate.ErrElicitationAnswered):
		if release { // answered meanwhile, and the rollback kept the release
			s.release(id)
		}
	case errors.Is(err, store.ErrNotFound):
	default:
		s.log.Warn("cancel elicitation", "elicitation_id", id, "err", err)
	}
}

// Answered hints the replica waiting on e that it has its answer (the API
// calls it after committing the answer).
func (s *Service) Answered(ctx context.Context, e store.Elicitation) {
	if err := s.pub.Publish(ctx, channel(e.ID), []byte(e.State)); err != nil {
		s.log.Warn("publish elicitation answer", "elicitation_id", e.ID, "err", err)
	}
	s.notifyChat(ctx, e)
}

// ChannelChat carries a hint that a chat's questions changed (asked or
// answered); its payload is the question's id. The chat's streams listen.
func ChannelChat(chatID uuid.UUID) string { return pubsub.ChannelElicitations(chatID.String()) }

func (s *Service) notifyChat(ctx context.Context, e store.Elicitation) {
	if err := s.pub.Publish(ctx, ChannelChat(e.ChatID), []byte(e.ID.String())); err != nil {
		s.log.Warn("publish elicitation change", "chat_id", e.ChatID, "err", err)
	}
}

// Run sweeps the questions whose holder is gone, once at start and then
// every hold interval, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	tick := s.clock.NewTicker(s.cfg.Hold)
	defer tick.Stop()
	for {
		s.Sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// Sweep answers "cancel" to the questions whose hold ended.
func (s *Service) Sweep(ctx context.Context) {
	var expired []store.Elicitation
	err := s.machine.Do(ctx, func(t *chatstate.Tx) error {
		var err error
		expired, err = t.ExpireElicitations()
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("sweep elicitations", "err", err)
		}
		return
	}
	for _, e := range expired {
		s.log.Info("elicitation cancelled: the process holding its server request is gone",
			"chat_id", e.ChatID, "elicitation_id", e.ID, "tool_call_id", e.ToolCallID)
		s.notifyChat(ctx, e)
	}
}
