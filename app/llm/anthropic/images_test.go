package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// TestImageParts: an image part goes to the Messages API as an image block
// with a base64 source, in order with the text; the fake server checks
// the block's shape and data, and refuses a bad one.
func TestImageParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := llm.Request{Model: "claude-test", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "What is this?"},
		{Type: sdk.PartFile, MediaType: "image/png", URL: "data:image/png;base64,iVBORw0KGgo="},
	}}}}
	_, err := b.p.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	raw, err := json.Marshal(b.srv.Requests()[0].JSON(t)["messages"])
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":"What is this?"},
		{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}
	]}]`, string(raw))

	req.Messages[0].Parts[1].URL = "data:image/png;base64,%%%"
	_, err = b.p.Stream(context.Background(), req, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "base64")
}
