package worker

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// fakeSource is an MCP manager as the worker sees it (tools.Source): tools
// by server id. A connecting server is waited for until the request's
// context ends, then left out, as the contract says.
type fakeSource struct {
	servers    map[uuid.UUID][]tools.Tool
	connecting map[uuid.UUID]bool

	mu    sync.Mutex
	asked [][]uuid.UUID // the servers argument of every call
}

var _ tools.Source = (*fakeSource)(nil)

func (f *fakeSource) Tools(ctx context.Context, _ tools.User, servers []uuid.UUID) []tools.Tool {
	f.mu.Lock()
	f.asked = append(f.asked, slices.Clone(servers))
	f.mu.Unlock()
	ids := servers
	if ids == nil {
		for id := range f.servers {
			ids = append(ids, id)
		}
		for id := range f.connecting {
			ids = append(ids, id)
		}
	}
	var out []tools.Tool
	for _, id := range ids {
		if f.connecting[id] {
			<-ctx.Done()
			continue
		}
		out = append(out, f.servers[id]...)
	}
	return out
}

func (f *fakeSource) calls() [][]uuid.UUID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// mcpTool is an MCP-like tool: SERVER__TOOL, with an effect class, whose
// first run blocks until its context ends (a crash cuts it short) when
// block is set; later runs answer {"ok":true}.
type mcpTool struct {
	name, effect string
	block        bool
	runs         atomic.Int32
	started      chan struct{}
}

func newMCPTool(name, effect string, block bool) *mcpTool {
	return &mcpTool{name: name, effect: effect, block: block, started: make(chan struct{}, 8)}
}

func (m *mcpTool) Name() string            { return m.name }
func (m *mcpTool) Description() string     { return "the " + m.name + " tool" }
func (m *mcpTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (m *mcpTool) Effect() string          { return m.effect }

func (m *mcpTool) Run(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	n := m.runs.Add(1)
	m.started <- struct{}{}
	if m.block && n == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.RawMessage(`{"ok":true}`), nil
}

// createChat makes a running chat with the given MCP selection.
func (g *fixture) createChat(servers []uuid.UUID, dynamic ...sdk.DynamicTool) uuid.UUID {
	g.t.Helper()
	p := chatstate.CreateParams{OwnerID: g.owner, Title: "t", TitleSource: store.TitleSourceUser,
		MCPServerIDs: servers, Input: chatstate.UserInput{Content: sdk.Text("use the tools")}}
	if len(dynamic) > 0 {
		raw, err := json.Marshal(dynamic)
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

func (g *fixture) journal(id uuid.UUID, call string) store.JournalEntry {
	g.t.Helper()
	var e store.JournalEntry
	require.NoError(g.t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.JournalGet(g.ctx, id, call)
		return err
	}))
	return e
}

// takeOver is a second worker, over the same store and machine, with its
// own MCP source: what a restarted process or another replica is.
func (g *fixture) takeOver(src tools.Source) *Worker {
	g.t.Helper()
	d := g.w.deps
	d.MCP = src
	w := New(g.w.cfg, d)
	ctx, cancel := context.WithCancel(g.ctx)
	g.t.Cleanup(func() { cancel(); w.manager.wait() })
	require.Equal(g.t, 1, w.AcquirePass(ctx), "the new worker takes the chat over")
	return w
}

func toolNames(req llm.Request) []string {
	names := []string{}
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

// toolResultOf is the result part of the tool message answering call.
func toolResultOf(t *testing.T, ms []store.Message, call string) (sdk.ChatMessagePart, bool) {
	t.Helper()
	for _, m := range ms {
		if m.Role != store.RoleTool {
			continue
		}
		for _, p := range partsOf(t, m) {
			if p.ToolCallID == call {
				return p, true
			}
		}
	}
	return sdk.ChatMessagePart{}, false
}

func TestMCPToolsOffered(t *testing.T) {
	alpha, beta := uuid.New(), uuid.New()
	echo := newMCPTool("alpha__echo", store.EffectPure, false)
	write := newMCPTool("beta__write", store.EffectEffectful, false)
	newSource := func() *fakeSource {
		return &fakeSource{servers: map[uuid.UUID][]tools.Tool{alpha: {echo}, beta: {write}}}
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, tc := range []struct {
			name    string
			servers []uuid.UUID
			want    []string
			asked   [][]uuid.UUID
		}{
			{"every server", nil, []string{"alpha__echo", "beta__write", "current_time"}, [][]uuid.UUID{nil}},
			{"none", []uuid.UUID{}, []string{"current_time"}, nil},
			{"one server", []uuid.UUID{alpha}, []string{"alpha__echo", "current_time"}, [][]uuid.UUID{{alpha}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				src := newSource()
				g := setupWith(t, newStore(t), Config{}, func(d *Deps) {
					d.MCP = src
					d.Tools = tools.NewRegistry(tools.Clock(d.Clock.Now))
				})
				g.createChat(tc.servers)
				require.Equal(t, 1, g.w.AcquirePass(g.ctx))
				call := g.provider.next(t)
				require.Equal(t, tc.want, toolNames(call.req))
				require.Equal(t, tc.asked, src.calls(), "the chat's selection reaches the source as it is")
			})
		}

		t.Run("a dynamic tool wins a name clash", func(t *testing.T) {
			t.Parallel()
			src := newSource()
			g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.MCP = src })
			id := g.createChat(nil, sdk.DynamicTool{Name: "alpha__echo", Description: "the client's"})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			call := g.provider.next(t)
			require.Equal(t, []string{"beta__write", "alpha__echo"}, toolNames(call.req))
			require.Equal(t, "the client's", call.req.Tools[1].Description)
			g.provider.answers <- toolCallReply("call_1", "alpha__echo")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the client answers it")
			require.NotNil(t, g.chat(id).RequiresActionDeadlineAt, "waiting for the client, not for review")
			require.Zero(t, echo.runs.Load(), "the MCP tool of the same name never ran")
		})
	})
}

// A call to an MCP tool runs through the journal like a built-in server
// tool: recorded with its effect class, completed with its result.
func TestMCPToolCallJournaled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		alpha := uuid.New()
		write := newMCPTool("alpha__write", store.EffectEffectful, false)
		src := &fakeSource{servers: map[uuid.UUID][]tools.Tool{alpha: {write}}}
		g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.MCP = src })
		id := g.createChat([]uuid.UUID{alpha})
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answers <- toolCallReply("call_1", "alpha__write")
		second := g.provider.next(t)
		last := second.req.Messages[len(second.req.Messages)-1]
		require.Equal(t, llm.RoleTool, last.Role)
		require.JSONEq(t, `{"ok":true}`, string(last.Parts[0].Result))
		require.False(t, last.Parts[0].IsError)
		e := g.journal(id, "call_1")
		require.Equal(t, store.JournalCompleted, e.State)
		require.Equal(t, store.EffectEffectful, e.Effect, "the journal records the tool's effect class")
		require.Equal(t, "alpha__write", e.ToolName)
		require.Equal(t, int32(1), write.runs.Load())
		g.provider.answer("done")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	})
}

// A crash (the worker stops without committing) while an MCP tool runs:
// the next worker judges the call by the journal, whether the tool's server
// is connected there or not. An effectful call never runs again and stops
// the chat for review; a pure one runs again when its tool is there, and
// otherwise gets an error result saying the server is unavailable.
func TestMCPToolCallAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name        string
		effect      string
		serverThere bool
	}{
		{"effectful", store.EffectEffectful, true},
		{"effectful, server gone", store.EffectEffectful, false},
		{"pure", store.EffectPure, true},
		{"idempotent", store.EffectIdempotent, true},
		{"pure, server gone", store.EffectPure, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
				alpha := uuid.New()
				tool := newMCPTool("alpha__act", tc.effect, true)
				src := &fakeSource{servers: map[uuid.UUID][]tools.Tool{alpha: {tool}}}
				g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.MCP = src })
				id := g.createChat(nil)

				runCtx, crash := context.WithCancel(g.ctx)
				require.Equal(t, 1, g.w.AcquirePass(runCtx))
				g.provider.next(t)
				g.provider.answers <- toolCallReply("call_1", "alpha__act")
				<-tool.started
				crash() // nothing is committed or abandoned
				g.w.manager.wait()
				require.Equal(t, store.JournalStarted, g.journal(id, "call_1").State)
				require.Equal(t, g.w.id, g.chat(id).WorkerID.UUID, "the dead worker still owns the chat")

				after := &fakeSource{servers: map[uuid.UUID][]tools.Tool{}} // not connected (yet), or removed
				if tc.serverThere {
					after = src
				}
				g.takeOver(after)

				if tc.effect == store.EffectEffectful {
					eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the chat stops for review")
					require.Nil(t, g.chat(id).RequiresActionDeadlineAt, "review has no deadline")
					require.Equal(t, store.JournalUnresolved, g.journal(id, "call_1").State)
					require.Equal(t, int32(1), tool.runs.Load(), "the effectful call never ran twice")
					_, answered := toolResultOf(t, g.messages(id), "call_1")
					require.False(t, answered, "the call is not answered (no \"unknown tool\")")
					require.Empty(t, g.provider.calls, "the model is not called")
					return
				}
				next := g.provider.next(t)
				last := next.req.Messages[len(next.req.Messages)-1]
				require.Equal(t, llm.RoleTool, last.Role)
				e := g.journal(id, "call_1")
				require.Equal(t, store.JournalCompleted, e.State)
				require.Equal(t, int64(2), e.Attempts)
				if tc.serverThere {
					require.Equal(t, int32(2), tool.runs.Load(), "the started call ran again, once")
					require.JSONEq(t, `{"ok":true}`, string(last.Parts[0].Result))
					require.False(t, last.Parts[0].IsError)
				} else {
					require.Equal(t, int32(1), tool.runs.Load(), "a tool that is gone does not run")
					require.True(t, last.Parts[0].IsError)
					require.Contains(t, string(last.Parts[0].Result), "unavailable")
					require.NotContains(t, string(last.Parts[0].Result), "unknown tool")
				}
				g.provider.answer("done")
				eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			})
		})
	}
}

// A server still connecting is waited for at most MCPToolsWait; the step
// then goes on with the servers that answered.
func TestMCPToolsWaitIsBounded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		alpha, slow := uuid.New(), uuid.New()
		src := &fakeSource{
			servers:    map[uuid.UUID][]tools.Tool{alpha: {newMCPTool("alpha__echo", store.EffectPure, false)}},
			connecting: map[uuid.UUID]bool{slow: true},
		}
		g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.MCP = src })
		g.createChat([]uuid.UUID{alpha, slow})
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		require.NoError(t, g.clock.BlockUntil(g.ctx, 1), "the step waits on the worker's clock")
		g.clock.Advance(DefaultMCPToolsWait)
		call := g.provider.next(t)
		require.Equal(t, []string{"alpha__echo"}, toolNames(call.req), "the connecting server is left out")
	})
}

// A tool reporting no known effect class is journaled as effectful.
func TestUnknownEffectIsEffectful(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		alpha := uuid.New()
		src := &fakeSource{servers: map[uuid.UUID][]tools.Tool{alpha: {newMCPTool("alpha__odd", "", false)}}}
		g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.MCP = src })
		id := g.createChat(nil)
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answers <- toolCallReply("call_1", "alpha__odd")
		g.provider.next(t)
		require.Equal(t, store.EffectEffectful, g.journal(id, "call_1").Effect)
		g.provider.answer("done")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	})
}
