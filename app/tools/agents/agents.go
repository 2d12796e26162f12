// Package agents holds the subagent tools (spec: "Generation goroutine"):
// a chat may delegate work to child chats with them. They are tools.Tool
// implementations over what the worker injects (Deps); the worker offers
// and runs them and defines none.
//
// A child is an ordinary chat with parent_chat_id and root_chat_id set,
// created through chatstate.Create, so the family rules (archive, delete,
// the shared root lock) hold for it; the worker's acquisition loop runs it
// in the limiter's subagent pool.
//
// Effect classes (what a re-run after a crash does, see app/worker/journal.go):
//   - spawn_agent is idempotent by construction: the child's id is a
//     UUIDv5 of the parent's id and the tool call id, so a re-run finds the
//     child the first run created instead of creating a second one.
//   - message_agent is idempotent the same way: the message carries a
//     request id derived from the parent and the call, and a re-run that
//     finds it in the child's history or queue does not send it again.
//   - interrupt_agent (and its alias close_agent) is idempotent: a second
//     interrupt of a chat that stopped changes nothing.
//   - wait_agent, list_agents and list_subagent_models are pure: a re-run
//     (a restart of the parent's worker) simply waits or reads again.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// Deps are what the agent tools need of the worker.
type Deps struct {
	// Store is for reads; every write goes through Machine.
	Store   store.ReadStore
	Machine *chatstate.Machine
	// Pubsub wakes wait_agent on a child's chat:update.
	Pubsub Subscriber
	Clock  clock.Clock
	// Hooks admits every prompt sent to a child (nil: hooks off).
	Hooks *hooks.Dispatcher
	// CheckModel says whether a model id spawn_agent names resolves.
	CheckModel func(uuid.NullUUID) error
	// Models lists the models list_subagent_models offers (nil: none).
	Models func() []sdk.ChatModel
	// GenerateTitle queues a title for a child created without one.
	GenerateTitle func(chatID uuid.UUID)
}

// Subscriber is the part of the pubsub wait_agent uses.
type Subscriber interface {
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
}

// Config is the worker's subagent settings.
type Config struct {
	// Enabled offers the agent tools at all.
	Enabled bool
	// MaxDepth is how deep a family may grow: a chat is offered the tools
	// while its children would be at most this deep.
	MaxDepth int
	// SyncInterval is how often wait_agent re-reads its children
	// (notifications are hints).
	SyncInterval time.Duration
}

// Service implements the agent tools.
type Service struct {
	deps Deps
	cfg  Config
}

// New returns the agent tools over deps.
func New(deps Deps, cfg Config) *Service { return &Service{deps: deps, cfg: cfg} }

// Agent tool names.
const (
	ToolSpawnAgent         = "spawn_agent"
	ToolWaitAgent          = "wait_agent"
	ToolMessageAgent       = "message_agent"
	ToolInterruptAgent     = "interrupt_agent"
	ToolCloseAgent         = "close_agent"
	ToolListAgents         = "list_agents"
	ToolListSubagentModels = "list_subagent_models"
)

// Bounds of wait_agent and the agent tools' arguments.
const (
	// DefaultAgentWait is wait_agent's timeout when the model sets none.
	DefaultAgentWait = 5 * time.Minute
	// MaxAgentWait caps wait_agent's timeout_seconds.
	MaxAgentWait = 30 * time.Minute
	// MaxWaitChats caps the chat_ids of one wait_agent call.
	MaxWaitChats = 16
	// MaxAgentPromptBytes caps a spawn prompt or an agent message.
	MaxAgentPromptBytes = 64 << 10
)

// agentNamespace derives message request ids from (parent, tool call).
var agentNamespace = uuid.MustParse("8f6f7d1e-3c1b-4d7e-9a51-2b0c8e4f6a13")

// SubagentID is the id spawn_agent gives the child of parent created by
// the tool call toolCallID: a UUIDv5, so a re-run of the call finds it.
func SubagentID(parent uuid.UUID, toolCallID string) uuid.UUID {
	return uuid.NewSHA1(parent, []byte(toolCallID))
}

// agentMessageRequestID marks the message a message_agent call sends.
func agentMessageRequestID(parent uuid.UUID, toolCallID string) uuid.UUID {
	return uuid.NewSHA1(agentNamespace, []byte(parent.String()+"/"+toolCallID))
}

// chatDepth is how many parents the chat has (0 for a root chat).
func chatDepth(ctx context.Context, tx store.Reader, c store.Chat) (int, error) {
	depth := 0
	for c.ParentChatID.Valid {
		depth++
		if depth > 64 {
			return depth, fmt.Errorf("chat %s: the parent chain is too long", c.ID)
		}
		var err error
		if c, err = tx.ChatGet(ctx, c.ParentChatID.UUID); err != nil {
			return 0, fmt.Errorf("read parent chat: %w", err)
		}
	}
	return depth, nil
}

// Offered: the chat is offered the agent tools while its children stay
// within the depth setting (a root chat's children are at depth 1).
func (a *Service) Offered(ctx context.Context, c store.Chat) (bool, error) {
	if !a.cfg.Enabled {
		return false, nil
	}
	if !c.ParentChatID.Valid {
		return true, nil
	}
	var depth int
	err := a.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		depth, err = chatDepth(ctx, tx, c)
		return err
	})
	return depth < a.cfg.MaxDepth, err
}

// Tools are the subagent tools. close_agent is listed for the history's
// sake (deprecatedTool keeps it out of the model's tool list).
func (a *Service) Tools() []tools.Tool {
	obj := func(props, required string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":[` + required + `],"additionalProperties":false}`)
	}
	interrupt := &tools.Func{
		ToolName: ToolInterruptAgent, EffectClass: store.EffectIdempotent,
		Desc:        "Interrupts a subagent you spawned: it stops what it is doing and waits. Its history stays.",
		InputSchema: obj(`"chat_id":{"type":"string","description":"the subagent's chat id"}`, `"chat_id"`),
		Fn:          a.interrupt,
	}
	return []tools.Tool{
		&tools.Func{
			ToolName: ToolSpawnAgent, EffectClass: store.EffectIdempotent,
			Desc: "Starts a subagent: a new chat that works on prompt on its own and runs in parallel with you. " +
				"Returns its chat_id at once; call wait_agent to get its answer. model_config_id and reasoning_effort " +
				"default to yours (list_subagent_models lists the choices).",
			InputSchema: obj(`"prompt":{"type":"string","description":"the task, with everything the subagent needs to know"},`+
				`"title":{"type":"string"},"model_config_id":{"type":"string"},`+
				`"reasoning_effort":{"type":"string","enum":["minimal","low","medium","high","xhigh"]}`, `"prompt"`),
			Fn: a.spawn,
		},
		&tools.Func{
			ToolName: ToolWaitAgent, EffectClass: store.EffectPure,
			Desc: fmt.Sprintf("Waits until the named subagents stop running (at most timeout_seconds, default %d, max %d) "+
				"and returns each one's status, last assistant text and error.", int(DefaultAgentWait.Seconds()), int(MaxAgentWait.Seconds())),
			InputSchema: obj(`"chat_ids":{"type":"array","items":{"type":"string"},"minItems":1},"timeout_seconds":{"type":"integer","minimum":1}`, `"chat_ids"`),
			Fn:          a.wait,
		},
		&tools.Func{
			ToolName: ToolMessageAgent, EffectClass: store.EffectIdempotent,
			Desc: "Sends a message to a subagent you spawned. It is queued while the subagent is busy, " +
				"unless interrupt is true, which interrupts its current work first.",
			InputSchema: obj(`"chat_id":{"type":"string"},"message":{"type":"string"},"interrupt":{"type":"boolean"}`, `"chat_id","message"`),
			Fn:          a.message,
		},
		interrupt,
		deprecatedTool{&tools.Func{
			ToolName: ToolCloseAgent, EffectClass: store.EffectIdempotent,
			Desc: "Deprecated alias of interrupt_agent.", InputSchema: interrupt.InputSchema, Fn: a.interrupt,
		}},
		&tools.Func{
			ToolName: ToolListAgents, EffectClass: store.EffectPure,
			Desc: "Lists the subagents of your chat family with their status.", InputSchema: obj("", ""), Fn: a.list,
		},
		&tools.Func{
			ToolName: ToolListSubagentModels, EffectClass: store.EffectPure,
			Desc: "Lists the models and reasoning efforts spawn_agent accepts.", InputSchema: obj("", ""), Fn: a.models,
		},
	}
}

// deprecatedTool still runs (old history resolves) but is not offered.
type deprecatedTool struct{ tools.Tool }

// Deprecated keeps the tool out of the model's tool list.
func (deprecatedTool) Deprecated() bool { return true }

// AgentStatus is one chat in an agent tool's result.
type AgentStatus struct {
	ChatID            uuid.UUID      `json:"chat_id"`
	ParentChatID      *uuid.UUID     `json:"parent_chat_id,omitempty"`
	Title             string         `json:"title,omitempty"`
	Status            string         `json:"status"`
	LastAssistantText string         `json:"last_assistant_text,omitempty"`
	Error             *sdk.ChatError `json:"error,omitempty"`
}

// caller is the calling chat, read fresh.
func (a *Service) caller(ctx context.Context) (tools.Call, store.Chat, error) {
	call, ok := tools.CallFrom(ctx)
	if !ok {
		return call, store.Chat{}, errors.New("agent tools need the calling chat")
	}
	var c store.Chat
	err := a.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(ctx, call.ChatID)
		return err
	})
	if err != nil {
		return call, c, fmt.Errorf("read the calling chat: %w", err)
	}
	return call, c, nil
}

// child reads a direct child of the calling chat by its id argument.
func (a *Service) child(ctx context.Context, parent uuid.UUID, raw string) (store.Chat, error) {
	id, err := uuid.Parse(strings.TrimSpace(raw))
	if err != nil {
		return store.Chat{}, fmt.Errorf("chat_id %q is not a chat id", raw)
	}
	var c store.Chat
	err = a.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || err == nil && (!c.ParentChatID.Valid || c.ParentChatID.UUID != parent) {
		return store.Chat{}, fmt.Errorf("chat %s is not a subagent of this chat", id)
	}
	return c, err
}

type spawnArgs struct {
	Prompt          string `json:"prompt"`
	Title           string `json:"title"`
	ModelConfigID   string `json:"model_config_id"`
	ReasoningEffort string `json:"reasoning_effort"`
}

// spawn creates the child (or finds the one an earlier run of the same
// call created) and returns {chat_id, status}.
func (a *Service) spawn(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args spawnArgs
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	call, parent, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Prompt) == "" {
		return nil, errors.New("prompt must not be empty")
	}
	if len(args.Prompt) > MaxAgentPromptBytes {
		return nil, fmt.Errorf("prompt is %d bytes; at most %d", len(args.Prompt), MaxAgentPromptBytes)
	}
	if ok, err := a.Offered(ctx, parent); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("this chat may not spawn subagents (CHATD_MAX_AGENT_DEPTH is %d)", a.cfg.MaxDepth)
		}
		return nil, err
	}
	// Model and effort: the spawn's, else the calling turn's. An explicit
	// model must resolve, or the spawn fails before any child exists.
	model, effort := call.ModelConfigID, call.ReasoningEffort
	if s := strings.TrimSpace(args.ModelConfigID); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("model_config_id %q is not a model id (list_subagent_models lists them)", s)
		}
		model = uuid.NullUUID{UUID: id, Valid: true}
		if err := a.deps.CheckModel(model); err != nil {
			return nil, fmt.Errorf("model_config_id %s: %w", id, err)
		}
	}
	if args.ReasoningEffort != "" {
		if !slices.Contains(modelinfo.RequestEfforts, args.ReasoningEffort) {
			return nil, fmt.Errorf("unknown reasoning_effort %q (want %s)", args.ReasoningEffort, strings.Join(modelinfo.RequestEfforts, ", "))
		}
		effort = args.ReasoningEffort
	}
	childID := SubagentID(parent.ID, call.ToolCallID)
	in, err := a.admitPrompt(ctx, parent, hooks.Submission{
		ChatID: childID, ID: childID.String(), Session: hooks.SessionCreate,
	}, chatstate.UserInput{Content: sdk.Text(args.Prompt), ModelConfigID: model, ReasoningEffort: effort})
	if err != nil {
		return nil, err
	}
	p := chatstate.CreateParams{
		ID: childID, OwnerID: parent.OwnerID,
		ParentChatID: uuid.NullUUID{UUID: parent.ID, Valid: true},
		Title:        strings.TrimSpace(args.Title), TitleSource: store.TitleSourceUser,
		MCPServerIDs: parent.MCPServerIDs, ToolApproval: parent.ToolApproval, Input: in,
	}
	if p.Title == "" {
		p.Title, p.TitleSource = chatstate.FallbackTitle(args.Prompt, 60), store.TitleSourceFallback
	}
	var child store.Chat
	created := false
	err = a.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		existing, err := t.Reader().ChatGet(ctx, p.ID)
		switch {
		case err == nil:
			child, created = existing, false // a re-run after a crash: the first run created it
			return nil
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		res, err := t.Create(p)
		child, created = res.Chat, err == nil
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	if created && p.TitleSource == store.TitleSourceFallback {
		a.deps.GenerateTitle(child.ID) // as POST /chats does for a chat without a title
	}
	return json.Marshal(map[string]any{"chat_id": child.ID, "status": child.Status})
}

// admitPrompt is the one place a subagent's prompt is admitted:
// spawn_agent and message_agent pass every prompt they send a child
// through it before the child's transition. With lifecycle hooks on it
// dispatches the child's session_start (a spawn) and user_prompt_submit as
// work already admitted (the parent's turn runs): a denial or a failed
// dispatch fails the tool call, and the prompt goes on as the consumer
// replaced it, with its context. The submission id is derived from the
// parent's tool call, so a re-run after a crash repeats the same event ids.
func (a *Service) admitPrompt(ctx context.Context, parent store.Chat, s hooks.Submission, in chatstate.UserInput) (chatstate.UserInput, error) {
	s.OwnerID = parent.OwnerID
	return a.deps.Hooks.Admit(ctx, hooks.Admitted, s, in)
}

type messageArgs struct {
	ChatID    string `json:"chat_id"`
	Message   string `json:"message"`
	Interrupt bool   `json:"interrupt"`
}

// message sends to a child, queued when it is busy (or interrupting it
// first). A re-run of the same call finds its message and sends nothing.
func (a *Service) message(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args messageArgs
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	call, parent, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Message) == "" {
		return nil, errors.New("message must not be empty")
	}
	if len(args.Message) > MaxAgentPromptBytes {
		return nil, fmt.Errorf("message is %d bytes; at most %d", len(args.Message), MaxAgentPromptBytes)
	}
	child, err := a.child(ctx, call.ChatID, args.ChatID)
	if err != nil {
		return nil, err
	}
	rid := uuid.NullUUID{UUID: agentMessageRequestID(call.ChatID, call.ToolCallID), Valid: true}
	in, err := a.admitPrompt(ctx, parent, hooks.Submission{ChatID: child.ID, ID: rid.UUID.String()},
		chatstate.UserInput{Content: sdk.Text(args.Message), RequestID: rid})
	if err != nil {
		return nil, err
	}
	busy := chatstate.BusyQueue
	if args.Interrupt {
		busy = chatstate.BusyInterrupt
	}
	var res chatstate.Result
	sent := false
	err = a.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		found, err := hasRequest(ctx, t.Reader(), child.ID, rid.UUID)
		if err != nil || found {
			sent = found
			return err
		}
		res, err = t.SendMessage(child.ID, in, busy)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("message subagent: %w", err)
	}
	out := map[string]any{"chat_id": child.ID, "status": res.Chat.Status, "queued": res.Queued != nil}
	if sent {
		out = map[string]any{"chat_id": child.ID, "already_sent": true}
	}
	return json.Marshal(out)
}

// hasRequest: the chat's history or queue holds a message of request id.
func hasRequest(ctx context.Context, tx store.Reader, chatID, id uuid.UUID) (bool, error) {
	q, err := tx.QueueList(ctx, chatID)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(q, func(m store.QueuedMessage) bool { return m.RequestID.Valid && m.RequestID.UUID == id }) {
		return true, nil
	}
	ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{IncludeDeleted: true})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(ms, func(m store.Message) bool { return m.RequestID.Valid && m.RequestID.UUID == id }), nil
}

// interrupt interrupts a child; one that is not working is left alone.
func (a *Service) interrupt(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args struct {
		ChatID string `json:"chat_id"`
	}
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	call, _, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	child, err := a.child(ctx, call.ChatID, args.ChatID)
	if err != nil {
		return nil, err
	}
	interrupted := false
	status := child.Status
	err = a.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		c, _, err := t.Peek(child.ID)
		if err != nil {
			return err
		}
		status = c.Status
		if c.Status != store.ChatStatusRunning && c.Status != store.ChatStatusRequiresAction {
			return nil // nothing to interrupt, or already stopping
		}
		res, err := t.Interrupt(child.ID)
		if err != nil {
			return err
		}
		interrupted, status = true, res.Chat.Status
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt subagent: %w", err)
	}
	return json.Marshal(map[string]any{"chat_id": child.ID, "status": status, "interrupted": interrupted})
}
