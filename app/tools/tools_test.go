package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

func TestRegistryAndBuiltins(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var got []byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Write([]byte("thanks"))
	}))
	defer hook.Close()
	reg := tools.NewRegistry(tools.Clock(func() time.Time { return now }), tools.Webhook(hook.URL, nil))
	require.Len(t, reg.List(), 2)
	require.Equal(t, "current_time", reg.List()[0].Name(), "sorted by name")

	clock, ok := reg.Get("current_time")
	require.True(t, ok)
	require.Equal(t, store.EffectPure, clock.Effect())
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(clock.Schema()))
	out, err := clock.Run(context.Background(), nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"utc":"2026-01-02T03:04:05Z"}`, string(out))

	hookTool, ok := reg.Get("send_webhook")
	require.True(t, ok)
	require.Equal(t, store.EffectEffectful, hookTool.Effect())
	out, err = hookTool.Run(context.Background(), json.RawMessage(`{"payload":{"a":1}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"payload":{"a":1}}`, string(got))
	require.JSONEq(t, `{"status":200,"body":"thanks"}`, string(out))

	_, ok = reg.Get("missing")
	require.False(t, ok)
	var nilReg *tools.Registry
	_, ok = nilReg.Get("x")
	require.False(t, ok)
}

// TestCallContext: the call the worker puts on a Run's context comes back
// from CallFrom; a context without one says so.
func TestCallContext(t *testing.T) {
	t.Parallel()
	_, ok := tools.CallFrom(context.Background())
	require.False(t, ok)
	want := tools.Call{ChatID: uuid.New(), OwnerID: uuid.New(), ToolCallID: "call_1", ReasoningEffort: "high"}
	got, ok := tools.CallFrom(tools.WithCall(context.Background(), want))
	require.True(t, ok)
	require.Equal(t, want, got)
}
