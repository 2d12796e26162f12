package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/tools/agents"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// routedProvider sends each call to the fake provider of the chat it
// belongs to, recognised by the text of the chat's first user message, so
// a parent and its children are scripted separately.
type routedProvider struct {
	mu     sync.Mutex
	routes map[string]*fakeProvider
}

var _ llm.Provider = (*routedProvider)(nil)

func (p *routedProvider) Name() string { return "fake" }

// route is the provider of the chat whose first prompt is prompt.
func (p *routedProvider) route(prompt string) *fakeProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		p.routes = map[string]*fakeProvider{}
	}
	if p.routes[prompt] == nil {
		p.routes[prompt] = newFakeProvider()
	}
	return p.routes[prompt]
}

func (p *routedProvider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			var b strings.Builder
			for _, part := range m.Parts {
				b.WriteString(part.Text)
			}
			return p.route(b.String()).Stream(ctx, req, onPart)
		}
	}
	return llm.Response{}, errors.New("no user message")
}

// models resolves every id to the routed provider; ids in bad fail, and
// Resolve blocks on gate when set (to crash a spawn in flight).
type agentModels struct {
	m    Model
	bad  uuid.UUID
	gate chan struct{}
	in   chan struct{}
}

func (a *agentModels) Resolve(id uuid.NullUUID) (Model, error) {
	if id.Valid && id.UUID == a.bad {
		return Model{}, errors.New("no such model")
	}
	if gate, in := a.gate, a.in; id.Valid && gate != nil {
		in <- struct{}{}
		<-gate
	}
	return a.m, nil
}

func (a *agentModels) List() []sdk.ChatModel {
	return []sdk.ChatModel{{ID: a.m.ID, Provider: "fake", Model: "fake-model", DisplayName: "Fake", Enabled: true, IsDefault: true}}
}

// agentRig is a fixture whose chats are scripted by their first prompt.
type agentRig struct {
	*fixture
	routed *routedProvider
	models *agentModels
}

func setupAgents(t *testing.T, s store.Store, cfg Config) *agentRig {
	t.Helper()
	cfg.Subagents = true
	routed := &routedProvider{}
	models := &agentModels{m: Model{ID: uuid.New(), Provider: routed, Name: "fake-model"}, bad: uuid.New()}
	g := setupWith(t, s, cfg, func(d *Deps) { d.Models = models })
	return &agentRig{fixture: g, routed: routed, models: models}
}

// callReply is a reply with one tool call.
func callReply(id, name, args string) providerResult {
	return providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{{
		Type: sdk.PartToolCall, ToolCallID: id, ToolName: name, Args: json.RawMessage(args),
	}}, FinishReason: "tool_calls"}}
}

// resultOf waits for call's result in the chat's history and decodes it.
func (g *agentRig) resultOf(id uuid.UUID, call string) (map[string]any, bool) {
	g.t.Helper()
	var part sdk.ChatMessagePart
	eventually(g.t, func() bool {
		for _, m := range g.peekMessages(id) {
			if m.Role != store.RoleTool {
				continue
			}
			var parts []sdk.ChatMessagePart
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.ToolCallID == call {
					part = p
					return true
				}
			}
		}
		return false
	}, "the result of %s", call)
	var out map[string]any
	require.NoError(g.t, json.Unmarshal(part.Result, &out), "%s", part.Result)
	return out, part.IsError
}

// children are the chats whose parent is id.
func (g *agentRig) children(id uuid.UUID) []store.Chat {
	g.t.Helper()
	var out []store.Chat
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		all, err := tx.ChatDescendants(g.ctx, id)
		for _, c := range all {
			if c.ParentChatID.UUID == id {
				out = append(out, c)
			}
		}
		return err
	}))
	return out
}

func agentNames(req llm.Request) []string {
	var out []string
	for _, n := range toolNames(req) {
		if strings.Contains(n, "agent") {
			out = append(out, n)
		}
	}
	return out
}

var offeredAgentTools = []string{"interrupt_agent", "list_agents", "list_subagent_models", "message_agent", "spawn_agent", "wait_agent"}

// TestAgentToolsOffered: root chats get the agent tools (close_agent only
// resolves old history, it is not offered); a child at the depth limit
// gets none; a deeper limit lets children spawn; off by default.
func TestAgentToolsOffered(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		t.Run("off by default", func(t *testing.T) {
			t.Parallel()
			g := setupOn(t, newStore(t), Config{})
			g.create("hello")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			require.Empty(t, agentNames(g.provider.next(t).req))
		})
		for _, depth := range []int{0, 2} {
			t.Run("depth "+string(rune('0'+depth)), func(t *testing.T) {
				t.Parallel()
				g := setupAgents(t, newStore(t), Config{MaxAgentDepth: depth})
				root := g.create("root prompt")
				var child uuid.UUID
				g.do(func(tx *chatstate.Tx) error {
					res, err := tx.Create(chatstate.CreateParams{OwnerID: g.owner, ParentChatID: uuid.NullUUID{UUID: root, Valid: true},
						Title: "c", TitleSource: store.TitleSourceUser, Input: chatstate.UserInput{Content: sdk.Text("child prompt")}})
					child = res.Chat.ID
					return err
				})
				require.Equal(t, 2, g.w.AcquirePass(g.ctx))
				require.Equal(t, offeredAgentTools, agentNames(g.routed.route("root prompt").next(t).req))
				var want []string
				if depth == 2 {
					want = offeredAgentTools
				}
				require.Equal(t, want, agentNames(g.routed.route("child prompt").next(t).req), "child %s", child)
			})
		}
	})
}

// TestSubagentSpawnWait: the parent spawns a child (id from the call),
// the child runs in the subagent pool with the parent's model, wait_agent
// returns its answer, and the parent goes on.
func TestSubagentSpawnWait(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		// One root slot: the parent holds it, the child runs in the
		// subagent pool.
		g := setupAgents(t, newStore(t), Config{RootLimit: 1})
		parent := g.create("parent prompt")
		p, c := g.routed.route("parent prompt"), g.routed.route("child prompt")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		p.next(t)
		p.answers <- callReply("call_spawn", agents.ToolSpawnAgent, `{"prompt":"child prompt","title":"Kid","reasoning_effort":"high"}`)
		res, isErr := g.resultOf(parent, "call_spawn")
		require.False(t, isErr, "%v", res)
		childID := agents.SubagentID(parent, "call_spawn")
		require.Equal(t, childID.String(), res["chat_id"])
		require.Equal(t, "running", res["status"])
		child := g.chat(childID)
		require.Equal(t, parent, child.ParentChatID.UUID)
		require.Equal(t, parent, child.RootChatID.UUID)
		require.Equal(t, g.owner, child.OwnerID)
		require.Equal(t, "Kid", child.Title)
		require.Equal(t, "high", child.LastReasoningEffort, "the explicit effort")

		p.next(t)
		p.answers <- callReply("call_wait", agents.ToolWaitAgent, `{"chat_ids":["`+childID.String()+`"]}`)
		eventually(t, func() bool { return g.journalState(parent, "call_wait") == store.JournalStarted }, "the wait runs")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx), "the child is acquired")
		first := c.next(t)
		require.Equal(t, "high", first.req.ReasoningEffort)
		c.answer("The child's answer.")
		res, isErr = g.resultOf(parent, "call_wait")
		require.False(t, isErr, "%v", res)
		require.Equal(t, false, res["timed_out"])
		listed := res["agents"].([]any)
		require.Len(t, listed, 1)
		a := listed[0].(map[string]any)
		require.Equal(t, "waiting", a["status"])
		require.Equal(t, "The child's answer.", a["last_assistant_text"])

		next := p.next(t)
		require.Equal(t, llm.RoleTool, next.req.Messages[len(next.req.Messages)-1].Role)
		p.answer("Parent done.")
		eventually(t, func() bool { return g.peek(parent).Status == store.ChatStatusWaiting }, "the parent finishes")
		require.Len(t, g.children(parent), 1)
	})
}

func (g *agentRig) journalState(id uuid.UUID, call string) store.JournalState {
	var e store.JournalEntry
	_ = g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.JournalGet(g.ctx, id, call)
		return err
	})
	return e.State
}

// run calls an agent tool directly as chat's call callID.
func (g *agentRig) run(chat uuid.UUID, callID, name, args string) (map[string]any, error) {
	g.t.Helper()
	var tool tools.Tool
	for _, t := range g.w.subagents().Tools() {
		if t.Name() == name {
			tool = t
		}
	}
	require.NotNil(g.t, tool, name)
	ctx := tools.WithCall(g.ctx, tools.Call{ChatID: chat, OwnerID: g.owner, ToolCallID: callID})
	raw, err := tool.Run(ctx, json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	var out map[string]any
	require.NoError(g.t, json.Unmarshal(raw, &out))
	return out, nil
}

// TestAgentToolsDirect runs each tool against a store: spawn is
// idempotent per call, bad input is a tool error before anything is
// created, message_agent sends once per call, interrupt and list work.
func TestAgentToolsDirect(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupAgents(t, newStore(t), Config{})
		parent := g.create("") // waiting: the tools run without a turn
		other := g.create("")

		out, err := g.run(parent, "c1", agents.ToolSpawnAgent, `{"prompt":"do it"}`)
		require.NoError(t, err)
		again, err := g.run(parent, "c1", agents.ToolSpawnAgent, `{"prompt":"do it"}`)
		require.NoError(t, err)
		require.Equal(t, out["chat_id"], again["chat_id"], "a re-run finds the same child")
		require.Len(t, g.children(parent), 1)
		child := uuid.MustParse(out["chat_id"].(string))

		for name, args := range map[string]string{
			"empty prompt":   `{"prompt":"  "}`,
			"unknown field":  `{"prompt":"x","colour":"red"}`,
			"bad model id":   `{"prompt":"x","model_config_id":"nope"}`,
			"unknown model":  `{"prompt":"x","model_config_id":"` + g.models.bad.String() + `"}`,
			"unknown effort": `{"prompt":"x","reasoning_effort":"max"}`,
		} {
			_, err := g.run(parent, "bad-"+name, agents.ToolSpawnAgent, args)
			require.Error(t, err, name)
		}
		require.Len(t, g.children(parent), 1, "a refused spawn creates nothing")

		_, err = g.run(child, "c2", agents.ToolSpawnAgent, `{"prompt":"grandchild"}`)
		require.ErrorContains(t, err, "CHATD_MAX_AGENT_DEPTH", "a child may not spawn at depth 1")

		_, err = g.run(other, "c3", agents.ToolMessageAgent, `{"chat_id":"`+child.String()+`","message":"hi"}`)
		require.ErrorContains(t, err, "not a subagent", "only the parent may message its child")
		_, err = g.run(parent, "c3", agents.ToolWaitAgent, `{"chat_ids":["`+other.String()+`"]}`)
		require.ErrorContains(t, err, "not a subagent")
		_, err = g.run(parent, "c3", agents.ToolWaitAgent, `{"chat_ids":[]}`)
		require.Error(t, err)

		for range 2 { // the same call twice: one message
			_, err := g.run(parent, "msg1", agents.ToolMessageAgent, `{"chat_id":"`+child.String()+`","message":"more work"}`)
			require.NoError(t, err)
		}
		var queued []store.QueuedMessage
		require.NoError(t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
			queued, err = tx.QueueList(g.ctx, child)
			return err
		}))
		require.Len(t, queued, 1, "the busy child queues the message once")

		out, err = g.run(parent, "i1", agents.ToolInterruptAgent, `{"chat_id":"`+child.String()+`"}`)
		require.NoError(t, err)
		require.Equal(t, true, out["interrupted"])
		out, err = g.run(parent, "i2", agents.ToolCloseAgent, `{"chat_id":"`+child.String()+`"}`)
		require.NoError(t, err, "close_agent is interrupt_agent")
		require.Equal(t, child.String(), out["chat_id"])

		out, err = g.run(parent, "l1", agents.ToolListAgents, `{}`)
		require.NoError(t, err)
		list := out["agents"].([]any)
		require.Len(t, list, 1)
		require.Equal(t, child.String(), list[0].(map[string]any)["chat_id"])

		out, err = g.run(parent, "m1", agents.ToolListSubagentModels, `{}`)
		require.NoError(t, err)
		require.Len(t, out["models"], 1)
	})
}

// TestSpawnAfterCrash: the parent's worker dies while spawn_agent runs
// (its journal entry started), before or after the child was committed.
// The next owner re-runs the call, which finds or creates the one child.
func TestSpawnAfterCrash(t *testing.T) {
	for _, created := range []bool{false, true} {
		name := "child not yet created"
		if created {
			name = "child created"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
				g := setupAgents(t, newStore(t), Config{})
				parent := g.create("parent prompt")
				childID := agents.SubagentID(parent, "call_spawn")
				p := g.routed.route("parent prompt")

				// The crash point: inside the model check (before the
				// child) or in the child's commit notification (after).
				stop, reached := make(chan struct{}), make(chan struct{}, 1)
				if created {
					var once sync.Once
					cancel, err := g.pubsub.Subscribe(g.ctx, pubsub.ChannelUpdate(childID.String()), func([]byte) {
						once.Do(func() { reached <- struct{}{}; <-stop })
					})
					require.NoError(t, err)
					defer cancel()
				} else {
					g.models.gate, g.models.in = stop, reached
				}
				runCtx, crash := context.WithCancel(g.ctx)
				require.Equal(t, 1, g.w.AcquirePass(runCtx))
				p.next(t)
				p.answers <- callReply("call_spawn", agents.ToolSpawnAgent, `{"prompt":"child prompt","model_config_id":"`+g.models.m.ID.String()+`"}`)
				<-reached
				crash()
				g.models.gate = nil
				close(stop)
				g.w.manager.wait()
				require.Equal(t, store.JournalStarted, g.journalState(parent, "call_spawn"))
				require.Len(t, g.children(parent), map[bool]int{false: 0, true: 1}[created])

				d := g.w.deps
				w := New(g.w.cfg, d)
				ctx, cancel := context.WithCancel(g.ctx)
				t.Cleanup(func() { cancel(); w.manager.wait() })
				require.GreaterOrEqual(t, w.AcquirePass(ctx), 1)
				res, isErr := g.resultOf(parent, "call_spawn")
				require.False(t, isErr, "%v", res)
				require.Equal(t, childID.String(), res["chat_id"])
				require.Len(t, g.children(parent), 1, "one child, whatever the crash point")
				require.Equal(t, store.JournalCompleted, g.journalState(parent, "call_spawn"))
			})
		})
	}
}

// TestWaitAfterRestart: the parent's worker dies while wait_agent waits;
// the next owner runs the wait again (pure), and it returns once the
// child has answered.
func TestWaitAfterRestart(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupAgents(t, newStore(t), Config{})
		parent := g.create("parent prompt")
		p, c := g.routed.route("parent prompt"), g.routed.route("child prompt")
		runCtx, crash := context.WithCancel(g.ctx)
		require.Equal(t, 1, g.w.AcquirePass(runCtx))
		p.next(t)
		p.answers <- callReply("call_spawn", agents.ToolSpawnAgent, `{"prompt":"child prompt"}`)
		childID := agents.SubagentID(parent, "call_spawn")
		p.next(t)
		p.answers <- callReply("call_wait", agents.ToolWaitAgent, `{"chat_ids":["`+childID.String()+`"],"timeout_seconds":60}`)
		eventually(t, func() bool { return g.journalState(parent, "call_wait") == store.JournalStarted }, "the wait runs")
		crash()
		g.w.manager.wait()
		require.Equal(t, store.JournalStarted, g.journalState(parent, "call_wait"), "the wait was cut off")

		w := New(g.w.cfg, g.w.deps)
		ctx, cancel := context.WithCancel(g.ctx)
		t.Cleanup(func() { cancel(); w.manager.wait() })
		require.Equal(t, 2, w.AcquirePass(ctx), "the parent and its child")
		c.next(t)
		c.answer("Answer after the restart.")
		res, isErr := g.resultOf(parent, "call_wait")
		require.False(t, isErr, "%v", res)
		a := res["agents"].([]any)[0].(map[string]any)
		require.Equal(t, "Answer after the restart.", a["last_assistant_text"])
		require.Equal(t, int64(2), g.journal(parent, "call_wait").Attempts, "the wait ran again")
		p.next(t)
		p.answer("Parent done.")
		eventually(t, func() bool { return g.peek(parent).Status == store.ChatStatusWaiting }, "the parent finishes")
	})
}
