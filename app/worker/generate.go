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
	"go.opentelemetry.io/otel/attribute"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// view is what one generation step reads, in one snapshot.
type view struct {
	chat   store.Chat
	active []store.Message // active messages from the latest boundary anchor on
	calls  []chatstate.ToolCall
	tools  []sdk.DynamicTool
	// files are the uploaded files the messages reference, by id (an
	// evicted one is absent); images and pdfs say whether the step's
	// model takes images and PDFs (set once the model is resolved).
	files  map[uuid.UUID]store.File
	images bool
	pdfs   bool
	// journaled holds the outstanding calls that have a tool-journal
	// entry: they ran (or started) as server-side calls, so the journal
	// judges them even when their tool is gone now.
	journaled map[string]bool

	// systemPrompt is the chat's system prompt ("" none), read in the
	// step's snapshot: a PATCH applies from the next model call.
	systemPrompt string

	// project is the chat's project (nil: none) and memories its memory
	// index, read in the same snapshot (memory.go).
	project  *store.Project
	memories []store.Memory
	// owner is the chat's owner as the snapshot has it (MCP access is
	// decided for them); ownerErr why it could not be read.
	owner    store.User
	ownerErr error
	// overBudget is why the owner may not start another model step (nil:
	// they may), read in the same snapshot.
	overBudget error
}

// load reads the chat's prompt-relevant history.
func (r *runner) load(ctx context.Context, ev event) (view, error) {
	var v view
	err := r.read(ctx, ev, func(tx store.Reader, c store.Chat) error {
		v.chat = c
		var err error
		if v.active, err = r.w.history.active(ctx, tx, c); err != nil {
			return err
		}
		// The system prompt is the chat's metadata; the system rows older
		// chats have in history were copied there (migration 00025).
		if v.systemPrompt, err = tx.ChatSystemPromptGet(ctx, c.ID); err != nil {
			return err
		}
		if v.calls, err = chatstate.OutstandingIn(v.active); err != nil {
			return err
		}
		v.journaled = map[string]bool{}
		for _, call := range v.calls {
			_, err := tx.JournalGet(ctx, c.ID, call.ID)
			switch {
			case err == nil:
				v.journaled[call.ID] = true
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		if v.files, err = loadFiles(ctx, tx, v.active); err != nil {
			return err
		}
		if len(c.DynamicTools) > 0 {
			if err := json.Unmarshal(c.DynamicTools, &v.tools); err != nil {
				return fmt.Errorf("decode dynamic tools: %w", err)
			}
		}
		if err := v.loadProject(ctx, tx); err != nil {
			return err
		}
		if r.w.deps.Budget != nil {
			if v.overBudget, err = r.w.deps.Budget.Over(ctx, tx, c.OwnerID); err != nil {
				return fmt.Errorf("read the budget of user %s: %w", c.OwnerID, err)
			}
		}
		// Last: a failed read of the owner leaves out MCP tools, not the step.
		v.owner, v.ownerErr = tx.UserGet(ctx, c.OwnerID)
		return nil
	})
	return v, err
}

// forModel is the part of history the model sees.
func forModel(m store.Message) bool { return m.Visibility != store.VisibilityUser }

// complete: nothing is left to answer. The last model-visible message is
// an assistant reply or a boundary anchor (a compaction without pending
// user input ends the turn).
func (v view) complete() bool {
	for i := len(v.active) - 1; i >= 0; i-- {
		m := v.active[i]
		if !forModel(m) {
			continue
		}
		return m.Role == store.RoleAssistant || chatstate.IsBoundaryAnchor(m)
	}
	return true
}

// steps counts assistant replies since the last user message that is not
// model-only (hook context and replayed compaction input do not restart it).
func (v view) steps() int {
	n := 0
	for i := len(v.active) - 1; i >= 0; i-- {
		m := v.active[i]
		if m.Role == store.RoleUser && m.Visibility != store.VisibilityModel {
			break
		}
		if m.Role == store.RoleAssistant && !m.Compressed {
			n++
		}
	}
	return n
}

// modelID is the model the turn asked for: the last user message's, else
// the chat's last one (else the default).
func (v view) modelID() uuid.NullUUID {
	for i := len(v.active) - 1; i >= 0; i-- {
		if m := v.active[i]; m.Role == store.RoleUser && m.ModelConfigID.Valid {
			return m.ModelConfigID
		}
	}
	return v.chat.LastModelConfigID
}

func (v view) effort() string {
	for i := len(v.active) - 1; i >= 0; i-- {
		if m := v.active[i]; m.Role == store.RoleUser && m.ReasoningEffort != "" {
			return m.ReasoningEffort
		}
	}
	return v.chat.LastReasoningEffort
}

// lastUsage is the newest assistant usage (for automatic compaction).
func (v view) lastUsage() *store.Usage {
	for i := len(v.active) - 1; i >= 0; i-- {
		if m := v.active[i]; m.Role == store.RoleAssistant && m.Usage != nil {
			return m.Usage
		}
	}
	return nil
}

// prompt builds the provider request from the project's and the chat's
// system prompts and the history after the latest boundary (model-only rows included, user-only excluded).
func (v view) prompt(upTo int) []llm.Message {
	var out []llm.Message
	add := func(m store.Message) {
		var parts []sdk.ChatMessagePart
		_ = json.Unmarshal(m.Content, &parts)
		out = append(out, llm.Message{Role: m.Role, Parts: v.fileParts(m.Role, parts)})
	}
	if sys, ok := v.projectPrompt(); ok {
		out = append(out, sys)
	}
	if v.systemPrompt != "" {
		out = append(out, llm.Message{Role: store.RoleSystem, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: v.systemPrompt}}})
	}
	for _, m := range v.active[:upTo] {
		if forModel(m) && m.Role != store.RoleSystem {
			add(m)
		}
	}
	return out
}

// dynamicNames are the names of the chat's dynamic (client) tools.
func (v view) dynamicNames() map[string]bool {
	names := map[string]bool{}
	for _, t := range v.tools {
		names[t.Name] = true
	}
	return names
}

// llmTools offers the model the server-side tools and the chat's dynamic
// tools; a dynamic tool wins a name clash.
func (v view) llmTools(server toolset) []llm.Tool {
	out := make([]llm.Tool, 0, len(server)+len(v.tools))
	dynamic := v.dynamicNames()
	for _, t := range server.sorted() {
		if !dynamic[t.Name()] && tools.Offered(t) {
			out = append(out, llm.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.Schema()})
		}
	}
	for _, t := range v.tools {
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// toolset is the server-side tools of one generation step, by name.
type toolset map[string]tools.Tool

// sorted lists the tools by name, so the model sees a stable order.
func (ts toolset) sorted() []tools.Tool {
	out := make([]tools.Tool, 0, len(ts))
	for _, t := range ts {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// serverTools are the tools the worker runs itself for this step: the
// registry's and those of the MCP servers the chat selected. A built-in
// tool keeps its name against an MCP one (MCP names are SERVER__TOOL, so
// a clash means a misnamed built-in).
func (r *runner) serverTools(ctx context.Context, v view) toolset {
	ts := toolset{}
	for _, t := range r.mcpTools(ctx, v) {
		ts[t.Name()] = t
	}
	for _, t := range r.w.deps.Tools.List() {
		ts[t.Name()] = t
	}
	for _, t := range r.memoryTools(v) {
		ts[t.Name()] = t
	}
	// The agent tools, for a chat that may have children (a failed read
	// leaves them out of this step).
	agents := r.w.subagents()
	if ok, err := agents.Offered(ctx, v.chat); err != nil {
		r.log.Warn("agent tools left out of this step", "err", err)
	} else if ok {
		for _, t := range agents.Tools() {
			ts[t.Name()] = t
		}
	}
	return ts
}

// mcpTools asks the MCP source for the tools of the chat's servers (nil:
// every configured server; empty: none, and the source is not asked) that
// its owner may use, as the owner is now (a subagent's owner is its
// parent's). It waits at most MCPToolsWait for servers still connecting:
// then it cancels the request, and the source answers with the servers it
// has. An owner that cannot be read gets no MCP tools this step.
func (r *runner) mcpTools(ctx context.Context, v view) []tools.Tool {
	src, servers, owner := r.w.deps.MCP, v.chat.MCPServerIDs, v.owner
	if src == nil || servers != nil && len(servers) == 0 {
		return nil
	}
	if v.ownerErr != nil {
		r.log.Warn("MCP tools left out of this step: the chat's owner was not read", "err", v.ownerErr)
		return nil
	}
	ctx, st := r.stage(ctx, StageMCPConnect)
	defer st.end(nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan []tools.Tool, 1)
	user := tools.User{ID: owner.ID, Name: owner.Name, Admin: owner.Admin}
	go func() { got <- src.Tools(ctx, user, servers) }()
	timer := r.w.clock.NewTimer(r.w.cfg.MCPToolsWait)
	defer timer.Stop()
	select {
	case ts := <-got:
		return ts
	case <-timer.C():
		r.log.Info("MCP servers still connecting; this step goes on without them", "waited", r.w.cfg.MCPToolsWait)
		cancel()
		return <-got
	}
}

// generate is the generation goroutine: it decides the one next step for
// this history version and commits it (spec: "Generation goroutine"). The
// commit moves history_version or the status, and the runner spawns the
// goroutine for the next step.
func (r *runner) generate(ctx context.Context, ev event) (err error) {
	start := r.w.clock.Now()
	v, err := r.load(ctx, ev)
	if err != nil {
		return err
	}
	ctx = r.turns.ensure(ctx, v.trigger())
	ctx, step := r.stageAt(ctx, StageGenerationStep, start)
	defer func() { step.end(stepFailure(ctx, err)) }()
	f := fence{ev: ev}
	if len(v.calls) > 0 {
		step.set(actionAttr("tool_calls"))
		return r.handleToolCalls(ctx, f, v)
	}
	if v.chat.CompactionRequestedAt != nil {
		step.set(actionAttr("compact"))
		if chatstate.SomethingToCompact(v.active) {
			return r.compact(ctx, ev, v, "manual")
		}
		return r.finishTurn(ctx, f) // nothing to compact: the marker is dropped
	}
	if v.complete() || v.steps() >= r.w.cfg.MaxSteps {
		step.set(actionAttr("finish"))
		return r.stopTurn(ctx, f, v)
	}
	if v.overBudget != nil {
		// The step that went over has committed; the turn stops here with
		// the reason on the chat (nothing is lost: a new prompt continues
		// once the budget resets).
		step.set(actionAttr("error"))
		return r.commit(ctx, f, func(t *chatstate.Tx) error {
			_, err := t.FinishError(r.chatID, sdk.ChatError{Message: v.overBudget.Error(), Kind: sdk.ChatErrorBudget})
			return err
		})
	}
	pctx, prep := r.stage(ctx, StagePrepare)
	model, err := r.w.deps.Models.Resolve(v.modelID())
	if err != nil {
		prep.end(err)
		step.set(actionAttr("error"))
		return r.commit(ctx, f, func(t *chatstate.Tx) error {
			_, err := t.FinishError(r.chatID, sdk.ChatError{Message: err.Error(), Kind: sdk.ChatErrorConfig})
			return err
		})
	}
	id := identityOf(model, v.effort())
	prep.onModel(id)
	step.onModel(id)
	// Every generation, each model step of a tool loop included, first
	// checks the automatic compaction trigger (compaction.go).
	compact, over := r.autoCompaction(v, model)
	if over != nil {
		prep.end(nil)
		step.set(actionAttr("error"))
		// Not a model call: chatd_generation_errors_total does not count
		// it; the turn's error outcome and this line do.
		r.stepLog(ev, v.turnRequest()).Warn("still over the context limit after compaction", "detail", over.Detail)
		return r.commit(ctx, f, func(t *chatstate.Tx) error {
			_, err := t.FinishError(r.chatID, *over)
			return err
		})
	}
	if compact {
		prep.end(nil)
		step.set(actionAttr("compact"))
		return r.compact(ctx, ev, v, "automatic")
	}
	server := r.serverTools(pctx, v)
	prep.end(nil)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	step.set(actionAttr("generate"))
	v.images = files.TakesImages(model.Provider.Name(), model.Name)
	v.pdfs = files.TakesPDF(model.Provider.Name(), model.Name)
	req := llm.Request{Model: model.Name, Messages: v.prompt(len(v.active)), Tools: v.llmTools(server), ReasoningEffort: model.effort(v.effort()), MaxOutputTokens: model.MaxOutputTokens}
	resp, done, err := r.callModel(ctx, ev, v, model, req, nil)
	if err != nil || done {
		return err
	}
	content, err := chatstate.EncodeParts(resp.Parts)
	if err != nil {
		return err
	}
	usage := toUsage(resp.Usage, model.ContextLimit)
	// A reply that calls no tool ends the turn: the next step would find
	// the history complete and finish it. Finishing in the step's own
	// transaction spares that step (a read and a commit) with the same
	// outcome, unless something still has to run first (see finishesTurn).
	finishes := r.finishesTurn(resp.Parts)
	var (
		finished bool
		queuedAt *time.Time
	)
	err = r.commit(ctx, f, func(t *chatstate.Tx) error {
		if _, err := t.CommitStep(r.chatID, chatstate.Step{Messages: []store.MessageInsertParams{{
			Role: store.RoleAssistant, Content: content, ModelConfigID: uuid.NullUUID{UUID: model.ID, Valid: model.ID != uuid.Nil},
			ReasoningEffort: req.ReasoningEffort, Usage: usage,
		}}, Charge: charge(model, store.UsageKindStep, resp.Usage)}); err != nil {
			return err
		}
		if !finishes {
			return nil
		}
		c, err := t.Reader().ChatGet(ctx, r.chatID)
		if err != nil {
			return err
		}
		if c.CompactionRequestedAt != nil {
			return nil // a compaction asked for meanwhile runs first
		}
		res, err := r.finishTurnTx(t)
		finished, queuedAt = err == nil, res.PromotedQueuedAt
		return err
	})
	if err == nil && finished {
		r.turns.finish(ctx, OutcomeCompleted)
		r.recordQueueWait(ctx, queuedAt)
	}
	return err
}

// finishTurnTx finishes the turn and, when the chat lands in waiting
// (nothing was queued), gives it up in the same transaction: the runner
// would abandon a waiting chat in a transaction of its own right after
// (process: a waiting chat spawns abandon), so the outcome is the same
// with one commit fewer. The committed row, no longer this runner's,
// stops the runner.
func (r *runner) finishTurnTx(t *chatstate.Tx) (chatstate.Result, error) {
	res, err := t.FinishTurn(r.chatID)
	if err != nil || res.Chat.Status != store.ChatStatusWaiting {
		return res, err
	}
	abandoned, err := t.Abandon(r.chatID)
	if err != nil {
		return res, err
	}
	res.Chat = abandoned.Chat
	return res, nil
}

// finishesTurn reports whether a reply of these parts ends the turn in
// the step that commits it: it calls no tool (so nothing is outstanding
// and the history is complete) and no stop hook has to run before the
// turn may finish (stopTurn dispatches it).
func (r *runner) finishesTurn(parts []sdk.ChatMessagePart) bool {
	if r.w.deps.Hooks.Enabled() {
		return false
	}
	return !slices.ContainsFunc(parts, func(p sdk.ChatMessagePart) bool { return p.Type == sdk.PartToolCall })
}

func toUsage(u llm.Usage, limit int64) *store.Usage {
	return &store.Usage{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
		ReasoningTokens: u.ReasoningTokens, CacheCreationTokens: u.CacheCreationTokens,
		CacheReadTokens: u.CacheReadTokens, ContextLimit: limit,
	}
}

func (r *runner) finishTurn(ctx context.Context, f fence) error {
	var queuedAt *time.Time
	err := r.commit(ctx, f, func(t *chatstate.Tx) error {
		res, err := r.finishTurnTx(t)
		queuedAt = res.PromotedQueuedAt
		return err
	})
	if err == nil {
		r.turns.finish(ctx, OutcomeCompleted)
		r.recordQueueWait(ctx, queuedAt)
	}
	return err
}

// handleToolCalls answers outstanding calls along the step's plan
// (planCalls): calls the worker answers itself (server-side tools, the
// registry's and the chat's MCP tools, and calls the journal has) go first,
// waiting for a person's approval when one is needed, then run under the
// journal; then calls to tools this chat does not have get an error result
// so the model can recover; dynamic tools wait for the client last
// (requires_action).
func (r *runner) handleToolCalls(ctx context.Context, f fence, v view) error {
	plan, err := r.planToolCalls(ctx, v)
	if err != nil {
		return err
	}
	if local := plan.answered(); len(local) > 0 {
		if ask := local.approvals(); len(ask) > 0 {
			return r.awaitApproval(ctx, f, ask)
		}
		return r.runTools(ctx, f, v, local)
	}
	if unknown := plan.of(callUnknown); len(unknown) > 0 {
		return r.answerUnknown(ctx, f, unknown)
	}
	return r.commit(ctx, f, func(t *chatstate.Tx) error {
		_, err := t.EnterRequiresAction(r.chatID)
		return err
	})
}

// answerUnknown answers calls to tools this chat does not have with an
// error result.
func (r *runner) answerUnknown(ctx context.Context, f fence, calls toolPlan) error {
	parts := make([]sdk.ChatMessagePart, 0, len(calls))
	for _, c := range calls {
		result, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("unknown tool %q", c.Name)})
		parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: result, IsError: true})
	}
	content, err := chatstate.EncodeParts(parts)
	if err != nil {
		return err
	}
	return r.commit(ctx, f, func(t *chatstate.Tx) error {
		_, err := t.CommitStep(r.chatID, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleTool, Content: content}}})
		return err
	})
}

// callModel runs one provider invocation with the spec's attempt
// accounting: RecordGenerationAttempt before each call (recordAttempt; the
// acquisition's for a runner's first call), a new buffer
// episode per attempt, RecordRetryState while backing off, FinishError for
// a non-retryable error or once the retry limit is spent. done reports that
// the step ended the turn (FinishError) and there is nothing to commit.
func (r *runner) callModel(ctx context.Context, ev event, v view, model Model, req llm.Request, prefix []sdk.ChatMessagePart) (resp llm.Response, done bool, err error) {
	f := fence{ev: ev}
	log := r.stepLog(ev, v.turnRequest())
	id := identityOf(model, req.ReasoningEffort)
	callCtx := withStageIdentity(ctx, r.identity(id))
	for {
		attempt, err := r.recordAttempt(ctx, f)
		if err != nil {
			return resp, false, err
		}
		ep := partbuf.Episode{ChatID: r.chatID, HistoryVersion: ev.HistoryVersion, GenerationAttempt: attempt}
		buf := r.w.deps.Buffer
		// Storing parts is best-effort: errors (full, closed) drop them.
		_ = buf.CreateEpisode(ep)
		for _, p := range prefix {
			_ = buf.AddPart(ep, p)
		}
		_ = buf.StartModelInvocation(ep)
		sctx, stream := r.stage(callCtx, StageStream)
		stream.onModel(id)
		first, think := r.firstToken(sctx, id), r.thinking(sctx, id)
		// The GenAI client span sits beside the stage spans of the stream
		// (provider_attempt, time_to_first_token stay the stream's).
		gctx, call := r.w.genai.call(sctx, model.Provider.Name(), req, r.w.clock.Now(), r.spanScope()...)
		resp, err = model.Provider.Stream(sctx, req, func(p sdk.ChatMessagePart) { first.part(p); think.part(p); _ = buf.AddPart(ep, p) })
		call.end(gctx, resp, err, r.w.clock.Now())
		first.done(err)
		think.done()
		stream.end(err)
		// Closing keeps the parts: an interrupt goroutine still reads them.
		buf.CloseEpisode(ep)
		if ctx.Err() != nil {
			return resp, false, ctx.Err()
		}
		if err == nil {
			return resp, false, nil
		}
		var perr *llm.Error
		if !errors.As(llm.Classify(model.Provider.Name(), err), &perr) {
			return resp, false, err
		}
		if !perr.Retryable || attempt > int64(r.w.cfg.MaxRetries) {
			log.Info("generation failed", "attempt", attempt, "err", perr)
			r.w.deps.Metrics.failed(perr.Kind)
			return resp, true, r.commit(ctx, f, func(t *chatstate.Tx) error {
				_, err := t.FinishError(r.chatID, perr.ChatError())
				return err
			})
		}
		delay := r.w.backoff(attempt)
		r.w.deps.Metrics.retry(perr.Kind)
		log.Info("generation failed; retrying", "attempt", attempt,
			"max_retries", r.w.cfg.MaxRetries, "delay", delay, "err", perr)
		retry := sdk.ChatRetry{
			Attempt: attempt, DelayMS: delay.Milliseconds(), Error: perr.Message,
			Kind: perr.Kind, RetryingAt: r.w.clock.Now().Add(delay).UTC(),
		}
		if err := r.commit(ctx, f, func(t *chatstate.Tx) error {
			_, err := t.RecordRetryState(r.chatID, retry)
			return err
		}); err != nil {
			return resp, false, err
		}
		_, backoff := r.stage(ctx, StageRetryBackoff)
		err = sleep(ctx, r.w.clock, delay)
		backoff.end(nil)
		if err != nil {
			return resp, false, err
		}
	}
}

// recordAttempt applies RecordGenerationAttempt before a model call and
// returns the attempt, unless the acquisition already recorded it for this
// runner's first call (takeReserved).
func (r *runner) recordAttempt(ctx context.Context, f fence) (int64, error) {
	if attempt, ok := r.takeReserved(f.ev.HistoryVersion); ok {
		return attempt, nil
	}
	var attempt int64
	err := r.commit(ctx, f, func(t *chatstate.Tx) error {
		res, err := t.RecordGenerationAttempt(r.chatID)
		attempt = res.Chat.GenerationAttempt
		return err
	})
	return attempt, err
}

// interrupt closes the interrupted attempt's episode and commits what it
// had streamed as the partial step (spec: "Interrupt goroutine").
func (r *runner) interrupt(ctx context.Context, ev event) error {
	var c store.Chat
	if err := r.read(ctx, ev, func(_ store.Reader, chat store.Chat) error { c = chat; return nil }); err != nil {
		return err
	}
	ep := partbuf.Episode{ChatID: r.chatID, HistoryVersion: c.HistoryVersion, GenerationAttempt: c.GenerationAttempt}
	buf := r.w.deps.Buffer
	buf.CloseEpisode(ep)
	// The turn is interrupted before the commit, so a prompt the commit
	// promotes cannot close it first (as abandoned).
	r.turns.join(ctx)
	r.turns.finish(ctx, OutcomeInterrupted)
	parts, err := buf.GetParts(ep)
	var partial []store.MessageInsertParams
	if err == nil && len(parts) > 0 {
		var a llm.Assembler
		for _, p := range parts {
			a.Add(p)
		}
		content, err := chatstate.EncodeParts(a.Parts())
		if err != nil {
			return err
		}
		partial = []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}
	}
	var queuedAt *time.Time
	err = r.commit(ctx, fence{ev: ev}, func(t *chatstate.Tx) error {
		res, err := t.FinishInterruption(r.chatID, partial)
		queuedAt = res.PromotedQueuedAt
		return err
	})
	if err == nil {
		r.recordQueueWait(ctx, queuedAt)
	}
	return err
}

// compact summarizes the history since the latest boundary into a
// compressed triplet; trailing user messages the assistant has not
// answered are not summarized but re-committed after it as model-only
// rows (spec: "Manual compaction"). An automatic compaction inside a turn
// (after tool results) re-commits the turn's prompt as well, so the turn
// goes on with its request (midTurnPrompt). The CommitStep clears the
// one-shot request.
func (r *runner) compact(ctx context.Context, ev event, v view, source string) (err error) {
	ctx, st := r.stage(ctx, StageCompaction, attribute.String("compaction_source", source))
	defer func() { st.end(stepFailure(ctx, err)) }()
	model, err := r.w.deps.Models.Resolve(v.modelID())
	if err == nil {
		st.onModel(identityOf(model, ""))
	}
	if err != nil {
		return r.commit(ctx, fence{ev: ev}, func(t *chatstate.Tx) error {
			_, err := t.FinishError(r.chatID, sdk.ChatError{Message: err.Error(), Kind: sdk.ChatErrorConfig})
			return err
		})
	}
	cut := len(v.active)
	for cut > 0 && v.active[cut-1].Role == store.RoleUser && !chatstate.IsBoundaryAnchor(v.active[cut-1]) {
		cut--
	}
	// The replayed rows: the pending input, after the prompt of a turn an
	// automatic compaction interrupts (a manual one runs on an idle chat).
	replay := v.active[cut:]
	midTurn := -1
	if source == "automatic" {
		midTurn = v.midTurnPrompt(cut)
	}
	if midTurn >= 0 {
		replay = append([]store.Message{v.active[midTurn]}, replay...)
	}
	guide, err := r.preCompact(ctx, v, source)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.hookFailed(ctx, fence{ev: ev}, err)
	}
	instruction := llm.SummaryInstruction
	if guide != "" {
		instruction += "\n\n" + guide
	}
	v.images = files.TakesImages(model.Provider.Name(), model.Name)
	v.pdfs = files.TakesPDF(model.Provider.Name(), model.Name)
	msgs := append(v.prompt(cut), llm.Message{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: instruction}}})
	progress := []sdk.ChatMessagePart{{Type: sdk.PartReasoning, Text: "Summarizing the conversation…"}}
	req := llm.Request{Model: model.Name, Messages: msgs, MaxOutputTokens: summaryMaxOutput(model)}
	resp, done, err := r.callModel(ctx, ev, v, model, req, progress)
	if err != nil || done {
		return err
	}
	var summary strings.Builder
	for _, p := range resp.Parts {
		if p.Type == sdk.PartText {
			summary.WriteString(p.Text)
		}
	}
	trigger := r.compactTrigger(model)
	args, _ := json.Marshal(map[string]any{"source": source, "threshold_percent": trigger.percent})
	result, _ := json.Marshal(newSummaryResult(source, summary.String(), model, trigger))
	// post_compact runs once the summary exists and its effects commit
	// with it: model context joins the summary the model reads (so it does
	// not resume a finished turn), user context follows as a prompt. A
	// failed dispatch keeps the summary and stops the chat.
	modelContext, userContext, hookErr := r.postCompact(ctx, v, source)
	if hookErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	text := "Summary of the conversation so far:\n\n" + summary.String()
	if modelContext != "" {
		text += "\n\n" + modelContext
	}
	if midTurn >= 0 {
		text += "\n\n" + midTurnNote
	}
	triplet, err := chatstate.BoundaryTriplet(r.chatID, text, chatstate.ToolChatSummarized, args, result)
	if err != nil {
		return err
	}
	for _, m := range replay {
		triplet = append(triplet, store.MessageInsertParams{
			Role: store.RoleUser, Content: m.Content, Visibility: store.VisibilityModel,
			CreatedBy: m.CreatedBy, ModelConfigID: m.ModelConfigID, ReasoningEffort: m.ReasoningEffort,
			RequestID: m.RequestID, // the turn's request stays findable after the boundary
		})
	}
	triplet = append(triplet, userContext...)
	return r.commit(ctx, fence{ev: ev}, func(t *chatstate.Tx) error {
		st := chatstate.Step{Messages: triplet, Compaction: true, Charge: charge(model, store.UsageKindCompaction, resp.Usage)}
		if _, err := t.CommitStep(r.chatID, st); err != nil {
			return err
		}
		if hookErr != nil {
			_, err := t.FinishError(r.chatID, hookError(hookErr))
			return err
		}
		return nil
	})
}
