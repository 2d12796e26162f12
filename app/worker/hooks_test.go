package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/hooks/hookstest"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// echoTool is a server tool that records the input of each run.
type echoTool struct {
	mu     sync.Mutex
	inputs []string
	runs   atomic.Int32
}

func (e *echoTool) tool() tools.Tool {
	return &tools.Func{ToolName: "echo", Desc: "echo", EffectClass: store.EffectEffectful,
		Fn: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			e.runs.Add(1)
			e.mu.Lock()
			e.inputs = append(e.inputs, string(args))
			e.mu.Unlock()
			return json.RawMessage(`{"echoed":` + string(args) + `}`), nil
		}}
}

// hookRig is a rig whose worker dispatches hooks to a test consumer and
// offers the echo tool.
func hookRig(t *testing.T, newStore func(t testing.TB) store.Store) (*fixture, *hookstest.Consumer, *echoTool) {
	c := hookstest.New(t)
	echo := &echoTool{}
	d, err := hooks.New(hooks.Config{
		URL: c.Server.URL, Secret: base64.StdEncoding.EncodeToString([]byte("secret")), Client: c.Server.Client(),
	})
	require.NoError(t, err)
	g := setupWith(t, newStore(t), Config{}, func(deps *Deps) {
		deps.Hooks = d
		deps.Tools = tools.NewRegistry(echo.tool())
	})
	return g, c, echo
}

func echoCall(id, args string) providerResult {
	return providerResult{resp: llm.Response{Parts: []sdk.ChatMessagePart{{
		Type: sdk.PartToolCall, ToolCallID: id, ToolName: "echo", Args: json.RawMessage(args),
	}}, FinishReason: "tool_calls"}}
}

// lastToolResult is the tool result the model sees at the end of a prompt.
func lastToolResult(t *testing.T, req llm.Request) sdk.ChatMessagePart {
	t.Helper()
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == llm.RoleTool {
			return m.Parts[0]
		}
	}
	t.Fatal("no tool result in the prompt")
	return sdk.ChatMessagePart{}
}

func TestHookPreToolUseDenies(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g, c, echo := hookRig(t, newStore)
		c.SetAnswer(func(r hooks.Request) (int, string) {
			if r.Event == hooks.PreToolUse {
				return http.StatusOK, `{"decision":"deny","reason":"not today","model_context":"policy: no echo"}`
			}
			return http.StatusOK, ``
		})
		id := g.create("echo something")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answers <- echoCall("call_1", `{"text":"hi"}`)
		second := g.provider.next(t)

		res := lastToolResult(t, second.req)
		require.True(t, res.IsError)
		require.JSONEq(t, `{"error":"denied: not today"}`, string(res.Result))
		last := second.req.Messages[len(second.req.Messages)-1]
		require.Equal(t, llm.RoleUser, last.Role, "the hook's model context follows the result")
		require.Equal(t, "policy: no echo", last.Parts[0].Text)
		require.Zero(t, echo.runs.Load(), "a denied call never runs")
		_, err := g.journalEntry(id, "call_1")
		require.ErrorIs(t, err, store.ErrNotFound, "a denied call is never started")

		g.provider.answer("ok, I won't")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		require.Equal(t, []hooks.Event{hooks.PreToolUse, hooks.Stop}, c.Names(), "no post_tool_use for a call that did not run")
		pre := c.Events()[0]
		require.Equal(t, id, pre.ChatID)
		require.Equal(t, "call_1", pre.ToolCallID)
		require.Equal(t, "echo", pre.ToolName)
		require.JSONEq(t, `{"text":"hi"}`, string(pre.ToolInput))
		require.Equal(t, hooks.EventID(id, pre.Turn, hooks.PreToolUse, "call_1"), pre.ID)
		require.Equal(t, pre.Turn, c.Events()[1].Turn, "one turn")
	})
}

func TestHookPreToolUseRewritesInput(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g, c, echo := hookRig(t, newStore)
		c.SetAnswer(func(r hooks.Request) (int, string) {
			switch r.Event {
			case hooks.PreToolUse:
				return http.StatusOK, `{"decision":"allow","updated_input":{"text":"rewritten"}}`
			case hooks.PostToolUse:
				return http.StatusOK, `{"user_context":"the hook saw the result"}`
			}
			return http.StatusOK, ``
		})
		id := g.create("echo something")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answers <- echoCall("call_1", `{"text":"original"}`)
		second := g.provider.next(t)

		require.Equal(t, []string{`{"text":"rewritten"}`}, echo.inputs, "the tool ran with the hook's input")
		res := lastToolResult(t, second.req)
		require.False(t, res.IsError)
		require.JSONEq(t, `{"echoed":{"text":"rewritten"}}`, string(res.Result))
		e := g.journal(id, "call_1")
		require.JSONEq(t, `{"text":"rewritten"}`, string(e.Args), "the journal records the input that ran")
		post := c.Events()[1]
		require.Equal(t, hooks.PostToolUse, post.Event)
		require.JSONEq(t, `{"text":"rewritten"}`, string(post.ToolInput))
		require.JSONEq(t, `{"echoed":{"text":"rewritten"}}`, string(post.ToolResult))
		last := second.req.Messages[len(second.req.Messages)-1]
		require.Equal(t, "the hook saw the result", last.Parts[0].Text)

		g.provider.answer("done")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		var visible int
		for _, m := range g.messages(id) {
			if m.Role == store.RoleUser && m.Visibility == store.VisibilityBoth {
				visible++
			}
		}
		require.Equal(t, 2, visible, "the user context is in history for people")
	})
}

// TestHookFailsClosed: a consumer that is down or answers garbage stops
// the operation: the call does not run, the chat finishes in error naming
// the hook, and it goes on once the consumer is back.
func TestHookFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(hooks.Request) (int, string)
		want   error
	}{
		{"down", func(hooks.Request) (int, string) { return http.StatusServiceUnavailable, `` }, hooks.ErrUnreachable},
		{"garbage", func(hooks.Request) (int, string) { return http.StatusOK, `<html>` }, hooks.ErrInvalidResponse},
		{"a decision it may not give", func(r hooks.Request) (int, string) {
			if r.Event == hooks.Stop {
				return http.StatusOK, `{"decision":"deny"}`
			}
			return http.StatusOK, `{"decision":"maybe"}`
		}, hooks.ErrInvalidResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
				g, c, echo := hookRig(t, newStore)
				c.SetAnswer(tc.answer)
				id := g.create("echo something")
				require.Equal(t, 1, g.w.AcquirePass(g.ctx))
				g.provider.next(t)
				g.provider.answers <- echoCall("call_1", `{"text":"hi"}`)
				eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusError }, "the chat stops in error")

				require.Zero(t, echo.runs.Load(), "the call did not run")
				var chatErr sdk.ChatError
				require.NoError(t, json.Unmarshal(g.chat(id).LastError, &chatErr))
				require.Contains(t, chatErr.Message, "lifecycle hook pre_tool_use", "the error names the hook")
				ms := g.messages(id)
				last := ms[len(ms)-1]
				require.Equal(t, store.RoleTool, last.Role, "the call has its one result")
				require.Contains(t, string(last.Content), "not run: lifecycle hook pre_tool_use")

				// The consumer recovers; the next prompt goes on.
				eventually(t, func() bool { return !g.peek(id).WorkerID.Valid }, "the runner gives the chat up")
				c.SetAnswer(nil)
				g.do(func(t *chatstate.Tx) error {
					_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("try again")}, chatstate.BusyQueue)
					return err
				})
				require.Equal(t, 1, g.w.AcquirePass(g.ctx))
				g.provider.next(t)
				g.provider.answers <- echoCall("call_2", `{"text":"again"}`)
				g.provider.next(t)
				require.Equal(t, int32(1), echo.runs.Load(), "with the consumer back, the call runs")
				g.provider.answer("done")
				eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
			})
		})
	}
}

// TestHookStopFailsClosed: a stop hook that fails leaves the turn in
// error instead of finishing it silently.
func TestHookStopFailsClosed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g, c, _ := hookRig(t, newStore)
		c.SetAnswer(func(hooks.Request) (int, string) { return http.StatusBadGateway, `` })
		id := g.create("hello")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answer("hi")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusError }, "the chat stops in error")
		var chatErr sdk.ChatError
		require.NoError(t, json.Unmarshal(g.chat(id).LastError, &chatErr))
		require.Contains(t, chatErr.Message, "lifecycle hook stop")
	})
}

// TestHookStopContext: model context from stop is recorded and the turn
// ends; user context continues the turn.
func TestHookStopContext(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g, c, _ := hookRig(t, newStore)
		var stops atomic.Int32
		c.SetAnswer(func(r hooks.Request) (int, string) {
			if r.Event == hooks.Stop && stops.Add(1) == 1 {
				return http.StatusOK, `{"user_context":"one more thing"}`
			}
			return http.StatusOK, `{"model_context":"noted"}`
		})
		id := g.create("hello")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		g.provider.answer("hi")
		second := g.provider.next(t)
		require.Equal(t, "one more thing", lastUserText(second.req), "user context continues the turn")
		g.provider.answer("and that")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
		ms := g.messages(id)
		last := ms[len(ms)-1]
		require.Equal(t, store.VisibilityModel, last.Visibility, "model context is recorded, model-only")
		require.Equal(t, int32(2), stops.Load())
	})
}

// journalEntry reads a call's journal entry, or the store's error.
func (g *fixture) journalEntry(id uuid.UUID, call string) (store.JournalEntry, error) {
	var e store.JournalEntry
	err := g.store.ReadTx(g.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.JournalGet(g.ctx, id, call)
		return err
	})
	return e, err
}

// TestHookCompaction: pre_compact's context guides the summary;
// post_compact's model context joins the summary without resuming a
// finished turn; a failed pre_compact stops the chat before summarizing.
func TestHookCompaction(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		firstTurn := func(t *testing.T, g *fixture) uuid.UUID {
			id := g.create("first")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answer("one")
			eventually(t, func() bool {
				c := g.peek(id)
				return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
			}, "the first turn finishes")
			g.do(func(t *chatstate.Tx) error {
				_, err := t.RequestCompaction(id)
				return err
			})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			return id
		}

		t.Run("context", func(t *testing.T) {
			g, c, _ := hookRig(t, newStore)
			c.SetAnswer(func(r hooks.Request) (int, string) {
				switch r.Event {
				case hooks.PreCompact:
					return http.StatusOK, `{"model_context":"keep the numbers"}`
				case hooks.PostCompact:
					return http.StatusOK, `{"model_context":"the policy still applies"}`
				}
				return http.StatusOK, ``
			})
			id := firstTurn(t, g)
			summary := g.provider.next(t)
			require.Equal(t, llm.SummaryInstruction+"\n\nkeep the numbers", lastUserText(summary.req))
			g.provider.answer("The user said first.")
			eventually(t, func() bool {
				c := g.peek(id)
				return c.Status == store.ChatStatusWaiting && c.CompactionRequestedAt == nil
			}, "the manual compaction ends the turn without a reply")
			var anchor string
			for _, m := range g.messages(id) {
				if chatstate.IsBoundaryAnchor(m) {
					anchor = partsOf(t, m)[0].Text
				}
			}
			require.Equal(t, "Summary of the conversation so far:\n\nThe user said first.\n\nthe policy still applies", anchor)
			var sources []string
			for _, r := range c.Events() {
				if r.Event == hooks.PreCompact || r.Event == hooks.PostCompact {
					sources = append(sources, string(r.Event)+":"+r.Source)
				}
			}
			require.Equal(t, []string{"pre_compact:manual", "post_compact:manual"}, sources)
		})

		t.Run("pre_compact fails closed", func(t *testing.T) {
			g, c, _ := hookRig(t, newStore)
			id := g.create("first")
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			g.provider.next(t)
			g.provider.answer("one")
			eventually(t, func() bool {
				c := g.peek(id)
				return c.Status == store.ChatStatusWaiting && !c.WorkerID.Valid
			}, "the first turn finishes")
			c.SetAnswer(func(hooks.Request) (int, string) { return http.StatusOK, `{"decision":"allow"}` })
			g.do(func(t *chatstate.Tx) error {
				_, err := t.RequestCompaction(id)
				return err
			})
			require.Equal(t, 1, g.w.AcquirePass(g.ctx))
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusError }, "the chat stops in error")
			var chatErr sdk.ChatError
			require.NoError(t, json.Unmarshal(g.chat(id).LastError, &chatErr))
			require.Contains(t, chatErr.Message, "lifecycle hook pre_compact")
			require.Len(t, g.provider.calls, 0, "nothing was summarized")
		})
	})
}
