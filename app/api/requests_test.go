package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Each answer from an existing claim carries its request_id, and its
// audit_id whenever the claim is the caller's.
func TestClaimConflictCarriesIDs(t *testing.T) {
	t.Parallel()
	caller, other := uuid.New(), uuid.New()
	key := claimKey{Kind: sdk.EndpointSendMessage, RequestSHA256: "aa", ContentSHA256: "bb"}
	for _, c := range []struct {
		state store.InvocationState
		who   uuid.UUID
		key   claimKey
		code  string // "" = replayable
		audit bool
	}{
		{store.InvocationCompleted, caller, key, "", false},
		{store.InvocationAdmitted, caller, key, sdk.CodeInvocationInProgress, true},
		{store.InvocationUnresolved, caller, key, sdk.CodeInvocationUnresolved, true},
		{store.InvocationReconciled, caller, key, sdk.CodeInvocationReconciled, true},
		{store.InvocationCompleted, caller, claimKey{Kind: sdk.EndpointSendMessage, RequestSHA256: "cc"}, sdk.CodeInvocationConflict, true},
		{store.InvocationCompleted, caller, claimKey{Kind: sdk.EndpointCreateChat}, sdk.CodeInvocationConflict, true},
		{store.InvocationCompleted, other, key, sdk.CodeInvocationConflict, false},
	} {
		inv := store.Invocation{RequestID: uuid.New(), CallerID: caller, AuditID: uuid.New(), State: c.state,
			Kind: sdk.EndpointSendMessage, RequestSHA256: "aa", ContentSHA256: "bb"}
		err := claimConflict(inv, c.who, c.key)
		if c.code == "" {
			require.NoError(t, err)
			continue
		}
		var ae *apiError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, c.code, ae.resp.Code)
		require.Equal(t, inv.RequestID, *ae.resp.RequestID, c.code)
		if c.audit {
			require.Equal(t, inv.AuditID, *ae.resp.AuditID, c.code)
		} else {
			require.Nil(t, ae.resp.AuditID, c.code)
		}
	}
}

// withRequestID adds request_id to any answer, without changing shared
// error values.
func TestWriteErrorAddsRequestID(t *testing.T) {
	t.Parallel()
	s := New(Config{}, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	id := uuid.New()
	for _, err := range []error{withRequestID(errChatNotFound, uuid.NullUUID{UUID: id, Valid: true}), errChatNotFound} {
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest(http.MethodPost, "/api/v2/chats", nil), err)
		require.Equal(t, http.StatusNotFound, rec.Code)
		var resp sdk.Response
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
		if err == errChatNotFound {
			require.Nil(t, resp.RequestID, "the shared error was not changed")
		} else {
			require.Equal(t, id, *resp.RequestID)
		}
	}
	require.Nil(t, withRequestID(nil, uuid.NullUUID{UUID: id, Valid: true}))
}
