package openai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

const pngURL = "data:image/png;base64,iVBORw0KGgo="

func imageRequest(url string) llm.Request {
	return llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "What is this?"},
		{Type: sdk.PartFile, MediaType: "image/png", Name: "cat.png", URL: url},
		{Type: sdk.PartText, Text: "[file: a.txt (text/plain, 2 bytes)]\nhi"},
	}}}}
}

// TestImageParts: an image part goes to Chat Completions as an image_url
// content part with the data URL, and to the Responses API as an
// input_image, in order with the text; the fake servers check the shapes.
func TestImageParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.p.Stream(context.Background(), imageRequest(pngURL), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":"What is this?"},
		{"type":"image_url","image_url":{"url":"`+pngURL+`"}},
		{"type":"text","text":"[file: a.txt (text/plain, 2 bytes)]\nhi"}
	]}]`, marshal(t, b.srv.Requests()[0].JSON(t)["messages"]))

	r := setupResponses(t)
	_, err = r.p.Stream(context.Background(), imageRequest(pngURL), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"input_text","text":"What is this?"},
		{"type":"input_image","image_url":"`+pngURL+`","detail":"auto"},
		{"type":"input_text","text":"[file: a.txt (text/plain, 2 bytes)]\nhi"}
	]}]`, marshal(t, r.srv.Requests()[0].JSON(t)["input"]))
}

// TestImageWireChecks: the fake servers refuse what the real APIs refuse,
// so a wrong image shape fails a test rather than production.
func TestImageWireChecks(t *testing.T) {
	t.Parallel()
	bad := llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{
		{Type: sdk.PartFile, URL: "data:image/png;base64,not base64!"},
	}}}}
	for name, b := range map[string]fixture{"chat completions": setup(t), "responses": setupResponses(t)} {
		_, err := b.p.Stream(context.Background(), bad, nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "base64", name)
	}
}
