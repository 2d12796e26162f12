package sdk_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// The example of docs/API.md ("Durable requests"): a client in another
// language checks its implementation against it.
func TestRequestBindingDocumentedExample(t *testing.T) {
	t.Parallel()
	chat := uuid.MustParse("0b8e8a52-3f1c-4f0e-9d55-6a1f1c1d2e3f")
	b, err := sdk.SendMessageBinding(chat, sdk.CreateChatMessageRequest{Content: sdk.Text("Check <runtime> health & logs")})
	require.NoError(t, err)
	canon, err := b.Canonical()
	require.NoError(t, err)
	const want = `{"busy_behavior":"queue","chat_id":"0b8e8a52-3f1c-4f0e-9d55-6a1f1c1d2e3f",` +
		`"content":[{"text":"Check <runtime> health & logs","type":"text"}],"endpoint":"send_message",` +
		`"labels":{},"mcp_server_ids":null,"model_config_id":null,"parent_chat_id":null,"reasoning_effort":"","system_prompt":"",` +
		`"title":"","unsafe_dynamic_tools":[]}`
	require.Equal(t, want, string(canon))
	sum := sha256.Sum256([]byte(want))
	hash, err := b.SHA256()
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(sum[:]), hash)
	require.Equal(t, "bfe82b574597ae8a997b7412fe2def8a03232f81c911b940b3debada7ca3c166", hash)
}

// The hash tells apart what the text-only hash does not, and ignores
// spelling: absent and explicit defaults, null and empty.
func TestRequestBindingDistinguishes(t *testing.T) {
	t.Parallel()
	chat := uuid.New()
	hash := func(req sdk.CreateChatMessageRequest) string {
		b, err := sdk.SendMessageBinding(chat, req)
		require.NoError(t, err)
		h, err := b.SHA256()
		require.NoError(t, err)
		return h
	}
	ab := []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "a"}, {Type: sdk.PartText, Text: "b"}}
	require.Equal(t, sdk.ContentSHA256(ab), sdk.ContentSHA256(sdk.Text("ab")), "the text hash cannot tell them apart")
	require.NotEqual(t, hash(sdk.CreateChatMessageRequest{Content: ab}), hash(sdk.CreateChatMessageRequest{Content: sdk.Text("ab")}))
	require.Equal(t, hash(sdk.CreateChatMessageRequest{Content: ab}),
		hash(sdk.CreateChatMessageRequest{Content: ab, BusyBehavior: sdk.BusyBehaviorQueue}))
	require.NotEqual(t, hash(sdk.CreateChatMessageRequest{Content: ab}),
		hash(sdk.CreateChatMessageRequest{Content: ab, BusyBehavior: sdk.BusyBehaviorInterrupt}))

	create := func(req sdk.CreateChatRequest) string {
		b, err := sdk.CreateChatBinding(req)
		require.NoError(t, err)
		h, err := b.SHA256()
		require.NoError(t, err)
		return h
	}
	require.Equal(t, create(sdk.CreateChatRequest{}), create(sdk.CreateChatRequest{Labels: map[string]string{}, Content: []sdk.ChatMessagePart{}}))
	require.NotEqual(t, create(sdk.CreateChatRequest{}), create(sdk.CreateChatRequest{Title: "x"}))

	// Raw JSON is canonicalised: key order and whitespace do not matter.
	b1 := sdk.RequestBinding{Endpoint: sdk.EndpointCreateChat, UnsafeDynamicTools: json.RawMessage(`[{"name":"t","input_schema":{"b":1,"a":2.50}}]`)}
	b2 := sdk.RequestBinding{Endpoint: sdk.EndpointCreateChat, UnsafeDynamicTools: json.RawMessage(` [ { "input_schema" : {"a":2.5,"b":1e0}, "name":"t"} ]`)}
	h1, err := b1.SHA256()
	require.NoError(t, err)
	h2, err := b2.SHA256()
	require.NoError(t, err)
	require.Equal(t, h1, h2)
	_, err = sdk.RequestBinding{UnsafeDynamicTools: json.RawMessage(`[1e400]`)}.SHA256()
	require.Error(t, err, "a number with no canonical form")
}
