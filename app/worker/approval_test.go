package worker

import (
	"context"
	"encoding/base64"
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

// Built-in tools follow CHATD_TOOL_APPROVAL by effect class: under
// "effectful" a pure tool runs at once and an effectful one waits for
// approval. An approved call runs through the journal, so a crash while it
// runs stops the chat for review instead of running it again.
func TestBuiltinToolApproval(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		pure := newMCPTool("lookup", store.EffectPure, false)
		effectful := newMCPTool("send", store.EffectEffectful, true)
		g := setupWith(t, newStore(t), Config{ToolApproval: store.ApprovalEffectful}, func(d *Deps) {
			d.Tools = tools.NewRegistry(pure, effectful)
		})
		id := g.createChat([]uuid.UUID{}) // no MCP servers: built-in tools only
		runCtx, crash := context.WithCancel(g.ctx)
		require.Equal(t, 1, g.w.AcquirePass(runCtx))
		g.provider.next(t)
		g.provider.answers <- toolCallReply("call_pure", "lookup")
		next := g.provider.next(t)
		last := next.req.Messages[len(next.req.Messages)-1]
		require.Equal(t, llm.RoleTool, last.Role, "the pure call ran without approval")
		require.Equal(t, int32(1), pure.runs.Load())

		g.provider.answers <- toolCallReply("call_send", "send")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the effectful call waits for approval")
		c := g.chat(id)
		require.Nil(t, c.RequiresActionDeadlineAt, "approval has no deadline")
		pending, err := chatstate.PendingApprovals(c)
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.Equal(t, sdk.ToolApproval{
			ToolCallID: "call_send", ToolName: "send", Server: "", Args: pending[0].Args, Effect: store.EffectEffectful, State: sdk.ApprovalPending,
		}, pending[0])
		require.Zero(t, effectful.runs.Load())
		require.NoError(t, g.store.ReadTx(g.ctx, func(tx store.Reader) error {
			_, err := tx.JournalGet(g.ctx, id, "call_send")
			require.ErrorIs(t, err, store.ErrNotFound, "nothing is journaled before the approval")
			return nil
		}))

		g.do(func(tx *chatstate.Tx) error {
			_, err := tx.AnswerApproval(id, []sdk.ToolApprovalAnswer{{ToolCallID: "call_send", Approved: true}})
			return err
		})
		<-effectful.started
		crash() // the approved call is under way when the worker dies
		g.w.manager.wait()
		require.Equal(t, store.JournalStarted, g.journal(id, "call_send").State)

		g.takeOver(nil)
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the chat stops for review")
		require.Equal(t, store.JournalUnresolved, g.journal(id, "call_send").State)
		require.Equal(t, int32(1), effectful.runs.Load(), "the approved call never ran twice")
		pending, err = chatstate.PendingApprovals(g.chat(id))
		require.NoError(t, err)
		require.Empty(t, pending, "it is not asked again")
	})
}

// A person answers before the lifecycle hooks: a call waiting for approval
// or denied by a person sends no pre_tool_use; an approved one goes through
// pre_tool_use (and runs) like any other call.
func TestApprovalBeforeHooks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := hookstest.New(t)
		echo := &echoTool{}
		d, err := hooks.New(hooks.Config{
			URL: c.Server.URL, Secret: base64.StdEncoding.EncodeToString([]byte("secret")), Client: c.Server.Client(),
		})
		require.NoError(t, err)
		g := setupWith(t, newStore(t), Config{ToolApproval: store.ApprovalEffectful}, func(deps *Deps) {
			deps.Hooks = d
			deps.Tools = tools.NewRegistry(echo.tool())
		})
		id := g.create("echo twice")
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		answer := func(call string, approved bool) {
			t.Helper()
			eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusRequiresAction }, "the call waits for approval")
			require.Empty(t, c.Names(), "no hook while the call waits")
			g.do(func(tx *chatstate.Tx) error {
				_, err := tx.AnswerApproval(id, []sdk.ToolApprovalAnswer{{ToolCallID: call, Approved: approved, Reason: "no echo"}})
				return err
			})
		}
		g.provider.next(t)
		g.provider.answers <- echoCall("call_1", `{"text":"one"}`)
		answer("call_1", false)
		second := g.provider.next(t)
		res := lastToolResult(t, second.req)
		require.True(t, res.IsError)
		require.JSONEq(t, `{"error":"denied: no echo"}`, string(res.Result))
		require.Empty(t, c.Names(), "a call a person denied sends no pre_tool_use")
		require.Zero(t, echo.runs.Load())

		g.provider.answers <- echoCall("call_2", `{"text":"two"}`)
		answer("call_2", true)
		third := g.provider.next(t)
		res = lastToolResult(t, third.req)
		require.False(t, res.IsError, string(res.Result))
		require.Equal(t, int32(1), echo.runs.Load())
		require.Equal(t, []hooks.Event{hooks.PreToolUse, hooks.PostToolUse}, c.Names())
		require.Equal(t, "call_2", c.Events()[0].ToolCallID)
		g.provider.answer("done")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	})
}
