package worker

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
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// Subagents (spec: "Generation goroutine"): a chat may delegate work to
// child chats with the agent tools. A child is an ordinary chat with
// parent_chat_id and root_chat_id set, created through chatstate.Create,
// so the family rules (archive, delete, the shared root lock) hold for it;
// the acquisition loop runs it in the limiter's subagent pool.
//
// Effect classes (what a re-run after a crash does, see journal.go):
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
	// DefaultMaxAgentDepth: root chats may spawn children, children may not.
	DefaultMaxAgentDepth = 1
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

// modelLister is the optional part of Models that lists the models
// (app.ModelList has it).
type modelLister interface {
	List() []sdk.ChatModel
}

// chatDepth is how many parents the chat has (0 for a root chat).
func (w *Worker) chatDepth(ctx context.Context, tx store.Reader, c store.Chat) (int, error) {
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

// mayUseAgents: the chat is offered the agent tools while its children
// stay within the depth setting (a root chat's children are at depth 1).
func (w *Worker) mayUseAgents(ctx context.Context, c store.Chat) (bool, error) {
	if !w.cfg.Subagents {
		return false, nil
	}
	if !c.ParentChatID.Valid {
		return true, nil
	}
	var depth int
	err := w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		depth, err = w.chatDepth(ctx, tx, c)
		return err
	})
	return depth < w.cfg.MaxAgentDepth, err
}

// agentTools are the subagent tools. close_agent is listed for the
// history's sake (deprecatedTool keeps it out of the model's tool list).
func (w *Worker) agentTools() []tools.Tool {
	a := agents{w: w}
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

// offered: the model is told about the tool.
func offered(t tools.Tool) bool {
	d, ok := t.(interface{ Deprecated() bool })
	return !ok || !d.Deprecated()
}

// agents implements the agent tools over the worker's machine and store.
type agents struct{ w *Worker }

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
func (a agents) caller(ctx context.Context) (tools.Call, store.Chat, error) {
	call, ok := tools.CallFrom(ctx)
	if !ok {
		return call, store.Chat{}, errors.New("agent tools need the calling chat")
	}
	var c store.Chat
	err := a.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
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
func (a agents) child(ctx context.Context, parent uuid.UUID, raw string) (store.Chat, error) {
	id, err := uuid.Parse(strings.TrimSpace(raw))
	if err != nil {
		return store.Chat{}, fmt.Errorf("chat_id %q is not a chat id", raw)
	}
	var c store.Chat
	err = a.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
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
func (a agents) spawn(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
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
	if ok, err := a.w.mayUseAgents(ctx, parent); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("this chat may not spawn subagents (CHATD_MAX_AGENT_DEPTH is %d)", a.w.cfg.MaxAgentDepth)
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
		if _, err := a.w.deps.Models.Resolve(model); err != nil {
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
	in, err := a.w.admitSubagentPrompt(ctx, parent, hooks.Submission{
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
	err = a.w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
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
		a.w.GenerateTitle(child.ID) // as POST /chats does for a chat without a title
	}
	return json.Marshal(map[string]any{"chat_id": child.ID, "status": child.Status})
}

// admitSubagentPrompt is the one place a subagent's prompt is admitted:
// spawn_agent and message_agent pass every prompt they send a child
// through it before the child's transition. With lifecycle hooks on it
// dispatches the child's session_start (a spawn) and user_prompt_submit as
// work already admitted (the parent's turn runs): a denial or a failed
// dispatch fails the tool call, and the prompt goes on as the consumer
// replaced it, with its context. The submission id is derived from the
// parent's tool call, so a re-run after a crash repeats the same event ids.
func (w *Worker) admitSubagentPrompt(ctx context.Context, parent store.Chat, s hooks.Submission, in chatstate.UserInput) (chatstate.UserInput, error) {
	s.OwnerID = parent.OwnerID
	return w.deps.Hooks.Admit(ctx, hooks.Admitted, s, in)
}

type waitArgs struct {
	ChatIDs        []string `json:"chat_ids"`
	TimeoutSeconds *int     `json:"timeout_seconds"`
}

// stopped: the child is not working (a chat waiting on a person counts as
// stopped: only the person can move it on).
func stopped(s store.ChatStatus) bool {
	return s != store.ChatStatusRunning && s != store.ChatStatusInterrupting
}

// wait blocks until every named child stops running or the timeout ends,
// woken by the children's update notifications and, as notifications are
// hints, re-reading every sync interval.
func (a agents) wait(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args waitArgs
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	call, _, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	if len(args.ChatIDs) == 0 || len(args.ChatIDs) > MaxWaitChats {
		return nil, fmt.Errorf("chat_ids must name 1 to %d subagents", MaxWaitChats)
	}
	timeout := DefaultAgentWait
	if args.TimeoutSeconds != nil {
		if *args.TimeoutSeconds < 1 {
			return nil, errors.New("timeout_seconds must be at least 1")
		}
		timeout = min(time.Duration(*args.TimeoutSeconds)*time.Second, MaxAgentWait)
	}
	var ids []uuid.UUID
	for _, s := range args.ChatIDs {
		c, err := a.child(ctx, call.ChatID, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	wake := make(chan struct{}, 1)
	for _, id := range ids {
		cancel, err := a.w.deps.Pubsub.Subscribe(ctx, pubsub.ChannelUpdate(id.String()), func([]byte) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return nil, fmt.Errorf("subscribe to subagent %s: %w", id, err)
		}
		defer cancel()
	}
	deadline := a.w.clock.NewTimer(timeout)
	defer deadline.Stop()
	tick := a.w.clock.NewTicker(a.w.cfg.SyncInterval)
	defer tick.Stop()
	for {
		// Subscribed before the read: a change after it wakes the loop.
		statuses, err := a.statuses(ctx, ids)
		if err != nil {
			return nil, err
		}
		done := !slices.ContainsFunc(statuses, func(s AgentStatus) bool { return !stopped(store.ChatStatus(s.Status)) })
		if done {
			return json.Marshal(map[string]any{"timed_out": false, "agents": statuses})
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C():
			return json.Marshal(map[string]any{"timed_out": true, "agents": statuses})
		case <-wake:
		case <-tick.C():
		}
	}
}

// statuses reads each chat's status, last assistant text and error.
func (a agents) statuses(ctx context.Context, ids []uuid.UUID) ([]AgentStatus, error) {
	out := make([]AgentStatus, 0, len(ids))
	err := a.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		out = out[:0]
		for _, id := range ids {
			c, err := tx.ChatGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				out = append(out, AgentStatus{ChatID: id, Status: "deleted"})
				continue
			}
			if err != nil {
				return err
			}
			s, err := agentStatus(ctx, tx, c)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// agentStatus describes c; its last assistant text is the text of the
// newest assistant message that has any.
func agentStatus(ctx context.Context, tx store.Reader, c store.Chat) (AgentStatus, error) {
	s := AgentStatus{ChatID: c.ID, Title: c.Title, Status: string(c.Status)}
	if c.ParentChatID.Valid {
		s.ParentChatID = &c.ParentChatID.UUID
	}
	if len(c.LastError) > 0 {
		var e sdk.ChatError
		if err := json.Unmarshal(c.LastError, &e); err == nil {
			s.Error = &e
		}
	}
	const page = 50
	before := int64(0)
	for {
		ms, err := tx.MessageList(ctx, c.ID, store.MessageListParams{BeforeID: before, Limit: page, Descending: true})
		if err != nil {
			return s, fmt.Errorf("read messages of %s: %w", c.ID, err)
		}
		for _, m := range ms {
			if m.Role != store.RoleAssistant || m.Visibility == store.VisibilityModel {
				continue
			}
			var parts []sdk.ChatMessagePart
			_ = json.Unmarshal(m.Content, &parts)
			var b strings.Builder
			for _, p := range parts {
				if p.Type == sdk.PartText {
					b.WriteString(p.Text)
				}
			}
			if b.Len() > 0 {
				s.LastAssistantText = b.String()
				return s, nil
			}
		}
		if len(ms) < page {
			return s, nil
		}
		before = ms[len(ms)-1].ID
	}
}

type messageArgs struct {
	ChatID    string `json:"chat_id"`
	Message   string `json:"message"`
	Interrupt bool   `json:"interrupt"`
}

// message sends to a child, queued when it is busy (or interrupting it
// first). A re-run of the same call finds its message and sends nothing.
func (a agents) message(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
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
	in, err := a.w.admitSubagentPrompt(ctx, parent, hooks.Submission{ChatID: child.ID, ID: rid.UUID.String()},
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
	err = a.w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
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
func (a agents) interrupt(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
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
	err = a.w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
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

// list lists the calling chat's family (every chat under its root but
// itself) with status.
func (a agents) list(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := tools.DecodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	_, c, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	out := []AgentStatus{}
	err = a.w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		family, err := tx.ChatDescendants(ctx, c.Root())
		if err != nil {
			return err
		}
		slices.SortFunc(family, func(x, y store.Chat) int { return x.CreatedAt.Compare(y.CreatedAt) })
		for _, m := range family {
			if m.ID == c.ID {
				continue
			}
			s, err := agentStatus(ctx, tx, m)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"agents": out})
}

// models lists the models spawn_agent accepts and the reasoning efforts.
func (a agents) models(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := tools.DecodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	type model struct {
		ID          uuid.UUID `json:"model_config_id"`
		DisplayName string    `json:"display_name"`
		Provider    string    `json:"provider"`
		Model       string    `json:"model"`
		Default     bool      `json:"default,omitempty"`
	}
	out := []model{}
	if l, ok := a.w.deps.Models.(modelLister); ok {
		for _, m := range l.List() {
			if m.Enabled {
				out = append(out, model{ID: m.ID, DisplayName: m.DisplayName, Provider: m.Provider, Model: m.Model, Default: m.IsDefault || m.Default})
			}
		}
	}
	return json.Marshal(map[string]any{"models": out, "reasoning_efforts": modelinfo.RequestEfforts,
		"default": "the calling chat's model and reasoning effort"})
}
