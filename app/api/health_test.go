package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A write refused for a full disk answers 503 STORAGE_FULL, and /healthz
// reports it for healthStorageWindow.
func TestStorageFull(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var logs bytes.Buffer
	s := New(Config{}, Deps{Store: dbtest.NewSQLite(t), Clock: fake, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	health := func() (int, map[string]string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		var body map[string]string
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		return rec.Code, body
	}
	code, body := health()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body["status"])

	h := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("commit: %w", fmt.Errorf("%w: database or disk is full", store.ErrStorageFull))
	})
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v2/chats", nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		var resp sdk.Response
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
		require.Equal(t, sdk.CodeStorageFull, resp.Code)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "msg=\"storage full"), "told once: %s", logs.String())

	code, body = health()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "storage_full", body["status"])
	require.Contains(t, body["message"], "2026-01-02T03:04:05Z")

	fake.Advance(healthStorageWindow - time.Second)
	code, _ = health()
	require.Equal(t, http.StatusServiceUnavailable, code)
	fake.Advance(time.Second)
	code, body = health()
	require.Equal(t, http.StatusOK, code, "the report ages out")
	require.Equal(t, "ok", body["status"])
}

// A storage-full write made outside a request (the worker's, reported by
// the state machine) shows on /healthz too, and is logged once.
func TestNoteStorageFull(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var logs bytes.Buffer
	s := New(Config{}, Deps{Store: dbtest.NewSQLite(t), Clock: fake, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	full := fmt.Errorf("commit: %w", store.ErrStorageFull)
	s.NoteStorageFull(full)
	s.NoteStorageFull(full)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), "storage_full")
	require.Equal(t, 1, strings.Count(logs.String(), "msg=\"storage full"), "told once: %s", logs.String())
}
