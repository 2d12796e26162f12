package worker

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// slowTool is a server tool (pure unless effect says otherwise) that runs
// until its context ends, so a test can interrupt a chat while its tools
// run.
type slowTool struct {
	effect  string
	started chan string // the args of each run, as it starts
	runs    atomic.Int32
}

func (s *slowTool) tool() tools.Tool {
	effect := s.effect
	if effect == "" {
		effect = store.EffectPure
	}
	return &tools.Func{ToolName: "slow", Desc: "waits", EffectClass: effect,
		Fn: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			s.runs.Add(1)
			s.started <- string(args)
			<-ctx.Done()
			return nil, ctx.Err()
		}}
}

// interruptRunningTools starts a chat whose first step calls the slow tool
// twice, waits until both calls run, interrupts it and waits until the
// interruption is finished and the chat is unowned.
func interruptRunningTools(t *testing.T, g *fixture, slow *slowTool) uuid.UUID {
	t.Helper()
	id := g.create("do two slow things")
	require.Equal(t, 1, g.w.AcquirePass(g.ctx))
	g.provider.next(t)
	g.provider.answers <- providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{
		{Type: sdk.PartToolCall, ToolCallID: "call_1", ToolName: "slow", Args: json.RawMessage(`{"n":1}`)},
		{Type: sdk.PartToolCall, ToolCallID: "call_2", ToolName: "slow", Args: json.RawMessage(`{"n":2}`)},
	}, FinishReason: "tool_calls"}}
	<-slow.started
	<-slow.started
	g.do(func(t *chatstate.Tx) error { _, err := t.Interrupt(id); return err })
	eventually(t, func() bool {
		c := g.peek(id)
		return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
	}, "the interruption finishes and the runner lets the chat go")
	return id
}

// TestInterruptRunningServerTools: a chat interrupted while its server
// tools run ends waiting with one cancellation result per call, committed
// by the interruption itself; the next turn's prompt carries them and no
// call runs again; a /compact sent right after the interrupt runs no tool.
func TestInterruptRunningServerTools(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		rig := func(t *testing.T, effect ...string) (*fixture, *slowTool) {
			slow := &slowTool{started: make(chan string, 4)}
			if len(effect) > 0 {
				slow.effect = effect[0]
			}
			g := setupWith(t, newStore(t), Config{}, func(d *Deps) { d.Tools = tools.NewRegistry(slow.tool()) })
			return g, slow
		}

		t.Run("cancellation results", func(t *testing.T) {
			g, slow := rig(t)
			id := interruptRunningTools(t, g, slow)

			ms := g.messages(id)
			require.NoError(t, chatstatetest.CheckToolResults(ms, true))
			last := ms[len(ms)-1]
			require.Equal(t, store.RoleTool, last.Role)
			parts := partsOf(t, last)
			require.Len(t, parts, 2, "one result per interrupted call")
			for i, p := range parts {
				require.Equal(t, []string{"call_1", "call_2"}[i], p.ToolCallID)
				require.Equal(t, sdk.PartToolResult, p.Type)
				require.True(t, p.IsError)
				var res chatstate.CancelledResult
				require.NoError(t, json.Unmarshal(p.Result, &res))
				require.True(t, res.Cancelled)
				require.Contains(t, res.Error, "interrupted")
				e := g.journal(id, p.ToolCallID)
				require.Equal(t, store.JournalCompleted, e.State, "the journal holds the answer history has")
				require.JSONEq(t, string(p.Result), string(e.Result))
			}

			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("never mind")}, chatstate.BusyQueue)
				return err
			})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			next := g.provider.next(t)
			var seen []string
			for _, m := range next.req.Messages {
				if m.Role != llm.RoleTool {
					continue
				}
				for _, p := range m.Parts {
					var res chatstate.CancelledResult
					require.NoError(t, json.Unmarshal(p.Result, &res))
					require.True(t, res.Cancelled)
					seen = append(seen, p.ToolCallID)
				}
			}
			require.Equal(t, []string{"call_1", "call_2"}, seen, "the next turn sees each cancellation once")
			require.Equal(t, "never mind", lastUserText(next.req))
			g.provider.answer("ok")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the next turn finishes")
			require.EqualValues(t, 2, slow.runs.Load(), "no interrupted call ran again")
			require.NoError(t, chatstatetest.CheckToolResults(g.messages(id), true))
		})

		// An effectful call that was running may have had its effect: it is
		// answered "outcome unknown, under review", not cancelled, and waits
		// for an operator; the chat still stops waiting, and nothing reruns it.
		t.Run("effectful call is under review", func(t *testing.T) {
			g, slow := rig(t, store.EffectEffectful)
			id := interruptRunningTools(t, g, slow)
			ms := g.messages(id)
			require.NoError(t, chatstatetest.CheckToolResults(ms, true))
			parts := partsOf(t, ms[len(ms)-1])
			require.Len(t, parts, 2)
			for _, p := range parts {
				require.True(t, p.IsError)
				var res chatstate.UnderReviewResult
				require.NoError(t, json.Unmarshal(p.Result, &res))
				require.True(t, res.UnderReview, "never cancelled: it may have run")
				require.Equal(t, store.JournalUnresolved, g.journal(id, p.ToolCallID).State)
			}
			g.do(func(t *chatstate.Tx) error {
				_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("go on")}, chatstate.BusyQueue)
				return err
			})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answer("ok")
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the next turn finishes")
			require.EqualValues(t, 2, slow.runs.Load(), "an effectful call never runs twice")
		})

		t.Run("compact after interrupt", func(t *testing.T) {
			g, slow := rig(t)
			id := interruptRunningTools(t, g, slow)
			g.do(func(t *chatstate.Tx) error { _, err := t.RequestCompaction(id); return err })
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			summary := g.provider.next(t)
			require.Equal(t, llm.SummaryInstruction, lastUserText(summary.req), "the compaction summarizes; it runs no tool")
			g.provider.answer("The user asked for two slow things and interrupted them.")
			eventually(t, func() bool {
				c := g.peek(id)
				return c.Status == store.ChatStatusWaiting && c.CompactionRequestedAt == nil
			}, "the compaction ends the turn")
			require.EqualValues(t, 2, slow.runs.Load(), "no interrupted call ran again")
			require.Empty(t, slow.started)
			require.Empty(t, g.chat(id).LastError, "no review, no error")
			require.NoError(t, chatstatetest.CheckToolResults(g.messages(id), true))
		})
	})
}
