package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// admitConsumer answers each event with answers[event] (200 and an empty
// body when absent) and records the events in order.
type admitConsumer struct {
	mu      sync.Mutex
	got     []hooks.Request
	answers map[hooks.Event]string
	status  int
}

func newAdmitDispatcher(t *testing.T, c *admitConsumer) *hooks.Dispatcher {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req hooks.Request
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		c.mu.Lock()
		c.got = append(c.got, req)
		answer, status := c.answers[req.Event], c.status
		c.mu.Unlock()
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	d, err := hooks.New(hooks.Config{URL: srv.URL, Secret: secret})
	require.NoError(t, err)
	return d
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	chatID, owner := uuid.New(), uuid.New()
	fileID := uuid.New()
	file := sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &fileID, MediaType: "image/png"}
	in := chatstate.UserInput{Content: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "rm -rf /"}, file}}
	ctx := context.Background()

	t.Run("context and replacement", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{answers: map[hooks.Event]string{
			hooks.SessionStart:     `{"model_context":"session note"}`,
			hooks.UserPromptSubmit: `{"updated_prompt":"list the files","model_context":"m","user_context":"u"}`,
		}}
		d := newAdmitDispatcher(t, c)
		out, err := d.Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID, OwnerID: owner, ID: "req-1", Session: hooks.SessionCreate}, in)
		require.NoError(t, err)
		require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "list the files"}, file}, out.Content, "the text is replaced, the file kept")
		require.Equal(t, []chatstate.HookContext{
			{Text: "session note", Visibility: store.VisibilityModel},
			{Text: "m", Visibility: store.VisibilityModel},
			{Text: "u", Visibility: store.VisibilityBoth},
		}, out.Context)
		require.Len(t, c.got, 2)
		require.Equal(t, hooks.SessionStart, c.got[0].Event)
		require.Equal(t, "create", c.got[0].Source)
		require.Equal(t, chatID.String()+":0:session_start:req-1", c.got[0].ID)
		require.Empty(t, c.got[0].Prompt)
		require.Equal(t, hooks.UserPromptSubmit, c.got[1].Event)
		require.Equal(t, chatID.String()+":0:user_prompt_submit:req-1", c.got[1].ID)
		require.Equal(t, in.Content, c.got[1].Prompt)
		require.Equal(t, owner, c.got[1].OwnerID)
		require.Equal(t, "rm -rf /", in.Content[0].Text, "the caller's input is not modified")
	})

	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{answers: map[hooks.Event]string{hooks.UserPromptSubmit: `{"decision":"deny","reason":"no shell"}`}}
		_, err := newAdmitDispatcher(t, c).Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID}, in)
		require.ErrorIs(t, err, hooks.ErrDenied)
		var de *hooks.DeniedError
		require.ErrorAs(t, err, &de)
		require.Equal(t, "no shell", de.Reason)
		require.Equal(t, "lifecycle hook user_prompt_submit denied the prompt: no shell", err.Error())
		require.Len(t, c.got, 1, "no session_start without Session")
		require.NotEmpty(t, c.got[0].SubmissionID, "a fresh submission id")
	})

	t.Run("session_start takes no decision", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{answers: map[hooks.Event]string{hooks.SessionStart: `{"decision":"deny"}`}}
		_, err := newAdmitDispatcher(t, c).Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID, Session: hooks.SessionEdit}, in)
		require.ErrorIs(t, err, hooks.ErrInvalidResponse)
		require.Contains(t, err.Error(), "lifecycle hook session_start")
		require.Len(t, c.got, 1, "user_prompt_submit is not sent after a failed session_start")
	})

	t.Run("an empty replacement", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{answers: map[hooks.Event]string{hooks.UserPromptSubmit: `{"updated_prompt":""}`}}
		_, err := newAdmitDispatcher(t, c).Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID},
			chatstate.UserInput{Content: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "x"}}})
		require.ErrorIs(t, err, hooks.ErrInvalidResponse)
	})

	t.Run("down", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{status: http.StatusServiceUnavailable}
		_, err := newAdmitDispatcher(t, c).Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID}, in)
		require.ErrorIs(t, err, hooks.ErrUnreachable)
		var he *hooks.Error
		require.True(t, errors.As(err, &he))
		require.Equal(t, hooks.UserPromptSubmit, he.Event)
	})

	t.Run("no prompt", func(t *testing.T) {
		t.Parallel()
		c := &admitConsumer{}
		out, err := newAdmitDispatcher(t, c).Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID, Session: hooks.SessionCreate}, chatstate.UserInput{})
		require.NoError(t, err)
		require.Empty(t, out.Context)
		require.Len(t, c.got, 1, "session_start only")
	})

	t.Run("off", func(t *testing.T) {
		t.Parallel()
		var d *hooks.Dispatcher
		out, err := d.Admit(ctx, hooks.Admission, hooks.Submission{ChatID: chatID, Session: hooks.SessionCreate}, in)
		require.NoError(t, err)
		require.Equal(t, in, out)
	})
}
