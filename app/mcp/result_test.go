package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestConvertResult(t *testing.T) {
	t.Parallel()
	size := int64(42)
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"one text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, `"hi"`},
		{"no content", &mcp.CallToolResult{Content: []mcp.Content{}}, `{"content":[]}`},
		{"two texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
			`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("12345"), MIMEType: "image/png"}}},
			`{"content":[{"type":"image","mimeType":"image/png","bytes":5,"data":"MTIzNDU="}]}`},
		{"audio", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: []byte("123"), MIMEType: "audio/wav"}}},
			`{"content":[{"type":"audio","mimeType":"audio/wav","bytes":3,"data":"MTIz"}]}`},
		{"resource link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a", Name: "a", Title: "A", Description: "d", MIMEType: "text/plain", Size: &size}}},
			`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","title":"A","description":"d","mimeType":"text/plain","size":42}]}`},
		{"embedded text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t", MIMEType: "text/plain", Text: "body"}}}},
			`{"content":[{"type":"resource","resource":{"uri":"file:///t","mimeType":"text/plain","text":"body"}}]}`},
		{"embedded blob", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Blob: []byte("xyz")}}}},
			`{"content":[{"type":"resource","resource":{"uri":"file:///b","bytes":3}}]}`},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1}},
			`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := convertResult(tc.res)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestConvertResultCapsText(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", MaxResultText) // two bytes each
	got, err := convertResult(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: big}, &mcp.TextContent{Text: "after"},
	}, StructuredContent: map[string]any{"big": big}})
	require.NoError(t, err)
	var out struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured any `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(got, &out))
	require.Less(t, len(got), MaxResultText+1024)
	require.Contains(t, out.Content[0].Text, "[truncated: ")
	require.True(t, strings.HasPrefix(out.Content[0].Text, "éé"))
	require.Equal(t, "\n[truncated: 5 more bytes]", out.Content[1].Text)
	require.Contains(t, out.Structured, "[omitted: ")
}

// TestConvertResultCapsMedia: image and audio data is kept, base64, while
// MaxResultMedia lasts; a block over it keeps its type, MIME type and size.
func TestConvertResultCapsMedia(t *testing.T) {
	t.Parallel()
	big := make([]byte, MaxResultMedia*3/4-3) // its base64 takes all but 4 bytes of the budget
	got, err := convertResult(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: big, MIMEType: "image/png"},
		&mcp.ImageContent{Data: []byte("12345"), MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte("123"), MIMEType: "audio/wav"},
	}})
	require.NoError(t, err)
	var out struct {
		Content []map[string]any `json:"content"`
	}
	require.NoError(t, json.Unmarshal(got, &out))
	require.Len(t, out.Content, 3)
	require.Len(t, out.Content[0]["data"], MaxResultMedia-4)
	require.NotContains(t, out.Content[1], "data", "over the budget")
	require.Equal(t, float64(5), out.Content[1]["bytes"])
	require.Equal(t, "MTIz", out.Content[2]["data"], "still within it")
}
