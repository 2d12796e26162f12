package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// fakeInvocations answers every command with err and records the targets.
type fakeInvocations struct {
	err  error
	seen []admin.InvocationTarget
}

var _ admin.Invocations = (*fakeInvocations)(nil)

func (f *fakeInvocations) Inspect(_ context.Context, g admin.InvocationTarget) (admin.Inspection, error) {
	f.seen = append(f.seen, g)
	return admin.Inspection{Turn: []sdk.ChatMessage{}, Journal: []store.JournalEntry{}}, f.err
}

func (f *fakeInvocations) Reconcile(_ context.Context, g admin.InvocationTarget, _ sdk.ReconcileRequest) (sdk.ReconcileResponse, error) {
	f.seen = append(f.seen, g)
	return sdk.ReconcileResponse{ToolCallIDs: []string{g.ToolCallID}}, f.err
}

// The invocation commands refuse bad targets with 400 and map the state
// machine's refusals: bad input 400, a state that does not allow it 409,
// a missing request 404; without Invocations they are not served.
func TestInvocationCommands(t *testing.T) {
	t.Parallel()
	id, chat := uuid.NewString(), uuid.NewString()
	for _, tc := range []struct {
		cmd, body string
		err       error
		nilOps    bool
		status    int
		code      string
	}{
		{cmd: "invocation.inspect", body: `{}`, status: 400, code: admin.CodeBadRequest},
		{cmd: "invocation.inspect", body: `{"request_id":"` + id + `","chat_id":"` + chat + `"}`, status: 400, code: admin.CodeBadRequest},
		{cmd: "invocation.inspect", body: `{"chat_id":"` + chat + `"}`, status: 400, code: admin.CodeBadRequest},
		{cmd: "invocation.inspect", body: `{"request_id":"` + id + `"}`, err: fmt.Errorf("request: %w", store.ErrNotFound), status: 404, code: admin.CodeNotFound},
		{cmd: "invocation.reconcile", body: `{"request_id":"` + id + `","review":{}}`, err: &chatstate.ValidationError{Field: "review", Detail: "assessment is required"}, status: 400, code: admin.CodeBadRequest},
		{cmd: "invocation.reconcile", body: `{"chat_id":"` + chat + `","tool_call_id":"c1","review":{"assessment":"x"}}`,
			err: &chatstate.JournalTransitionError{ToolCallID: "c1", From: store.JournalReconciled, To: store.JournalReconciled}, status: 409, code: admin.CodeConflict},
		{cmd: "invocation.reconcile", body: `{"chat_id":"` + chat + `","tool_call_id":"c1","review":{"assessment":"x"}}`, status: 200},
		{cmd: "invocation.inspect", body: `{"request_id":"` + id + `"}`, nilOps: true, status: 404, code: admin.CodeNotFound},
	} {
		fake := &fakeInvocations{err: tc.err}
		ops := &admin.Ops{Invocations: fake}
		if tc.nilOps {
			ops.Invocations = nil
		}
		srv := httptest.NewServer(admin.Handler(ops))
		res, err := http.Post(srv.URL+"/v1/"+tc.cmd, "application/json", strings.NewReader(tc.body))
		require.NoError(t, err)
		var e admin.Error
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		res.Body.Close()
		srv.Close()
		require.Equal(t, tc.status, res.StatusCode, "%s %s: %s", tc.cmd, tc.body, e.Message)
		require.Equal(t, tc.code, e.Code, "%s %s", tc.cmd, tc.body)
	}
}
