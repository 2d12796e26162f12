package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// A message sent with its stored content passed through encodes to the
// same JSON as one decoded and encoded again, and decodes to the same
// message; content that is not a JSON array is sent as [] either way.
func TestToMessageRaw(t *testing.T) {
	parts := []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "hello <world> & \u00e9"},
		{Type: sdk.PartToolCall, ToolCallID: "c1", ToolName: "search", Args: json.RawMessage(`{"q": "x"}`)},
	}
	content, err := json.Marshal(parts)
	require.NoError(t, err)
	user := uuid.New()
	m := store.Message{
		ID: 7, ChatID: uuid.New(), Role: store.RoleAssistant, Content: content,
		CreatedBy: uuid.NullUUID{UUID: user, Valid: true}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	for name, stored := range map[string]json.RawMessage{
		"as encoded":      content,
		"with whitespace": json.RawMessage(" [ " + string(content[1:len(content)-1]) + " ]\n"),
	} {
		t.Run(name, func(t *testing.T) {
			m := m
			m.Content = stored
			raw := wire.ToMessageRaw(m)
			require.Nil(t, raw.Content)
			require.NotNil(t, raw.RawContent)
			got, err := json.Marshal(raw)
			require.NoError(t, err)
			want, err := json.Marshal(wire.ToMessage(m))
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))

			var back sdk.ChatMessage
			require.NoError(t, json.Unmarshal(got, &back))
			require.Equal(t, wire.ToMessage(m), back)
			p, err := raw.Parts()
			require.NoError(t, err)
			require.Equal(t, wire.ToMessage(m).Content, p)
		})
	}
	for name, stored := range map[string]json.RawMessage{
		"null":      json.RawMessage(`null`),
		"an object": json.RawMessage(`{"type":"text"}`),
		"malformed": json.RawMessage(`[{"type":`),
		"empty":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			m := m
			m.Content = stored
			raw := wire.ToMessageRaw(m)
			require.Nil(t, raw.RawContent)
			got, err := json.Marshal(raw)
			require.NoError(t, err)
			var decoded map[string]any
			require.NoError(t, json.Unmarshal(got, &decoded))
			require.Equal(t, []any{}, decoded["content"])
		})
	}
}
