package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// captureDefault points slog.Default at a buffer for the test, so a test can
// prove nothing was logged there. Not parallel: the default is global.
func captureDefault(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// TestHandleWritesErrors checks the one wrapper every handler goes through:
// the wire answer of each kind of error, and that only unexpected errors
// (500) are logged, with the server's logger and not slog.Default.
func TestHandleWritesErrors(t *testing.T) {
	defaultLog := captureDefault(t)
	cases := []struct {
		name   string
		err    error
		status int
		code   string
		logged bool
	}{
		{"unexpected", fmt.Errorf("read chat: %w", errors.New("disk on fire")), http.StatusInternalServerError, sdk.CodeInternal, true},
		{"validation", validation("title", "title is empty"), http.StatusBadRequest, sdk.CodeValidation, false},
		{"not found", fmt.Errorf("get chat: %w", chatstate.ErrNotFound), http.StatusNotFound, sdk.CodeNotFound, false},
		{"unavailable", fmt.Errorf("commit: %w", store.ErrUnavailable), http.StatusServiceUnavailable, sdk.CodeAuditUnavailable, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var serverLog bytes.Buffer
			s := New(Config{}, Deps{Log: slog.New(slog.NewTextHandler(&serverLog, nil))})
			h := s.handle(func(w http.ResponseWriter, r *http.Request) error { return tc.err })

			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v2/chats", nil))

			require.Equal(t, tc.status, rec.Code)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var resp sdk.Response
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
			require.Equal(t, tc.code, resp.Code)
			if tc.logged {
				require.Contains(t, serverLog.String(), "internal error")
				require.Contains(t, serverLog.String(), "disk on fire")
				require.Contains(t, serverLog.String(), "path=/api/v2/chats")
				// The cause stays in the log, not on the wire.
				require.NotContains(t, rec.Body.String(), "disk on fire")
			} else {
				require.Empty(t, serverLog.String())
			}
			require.Empty(t, defaultLog.String(), "nothing goes to slog.Default")
		})
	}
}

// TestHandleWritesNothingOnSuccess checks that a handler returning nil
// keeps its own answer.
func TestHandleWritesNothingOnSuccess(t *testing.T) {
	var serverLog bytes.Buffer
	s := New(Config{}, Deps{Log: slog.New(slog.NewTextHandler(&serverLog, nil))})
	h := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/api/v2/chats/x", nil))
	require.Equal(t, http.StatusNoContent, rec.Code)
	require.Empty(t, rec.Body.String())
	require.Empty(t, serverLog.String())
}
