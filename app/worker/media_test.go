package worker

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// TestPDFPartsForTheModel: a PDF reaches a model that reads PDFs as a file
// part with a data URL, and any other model as a note.
func TestPDFPartsForTheModel(t *testing.T) {
	t.Parallel()
	pdf := uuid.New()
	v := view{files: map[uuid.UUID]store.File{
		pdf: {ID: pdf, Name: "r.pdf", MediaType: "application/pdf", Content: []byte("%PDF-1.4")},
	}}
	parts := []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "read"}, {Type: sdk.PartFile, FileID: &pdf, Name: "r.pdf"}}
	got := v.fileParts(store.RoleUser, parts)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "[PDF r.pdf: not shown, this model does not read PDFs]"}, got[1])

	v.pdfs = true
	got = v.fileParts(store.RoleUser, parts)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &pdf, Name: "r.pdf", MediaType: "application/pdf",
		URL: "data:application/pdf;base64,JVBERi0xLjQ="}, got[1])
}

// TestToolMediaForTheModel: the image data a tool returned stays in its
// result for a model that takes images and is removed (the block kept as
// a description) for one that does not; audio is left to the provider,
// and the stored parts are not changed.
func TestToolMediaForTheModel(t *testing.T) {
	t.Parallel()
	result := json.RawMessage(`{"content":[{"type":"image","mimeType":"image/png","bytes":3,"data":"AQID"},{"type":"audio","mimeType":"audio/wav","bytes":3,"data":"AQID"}]}`)
	parts := []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "c1", Result: result}}

	got := view{images: true}.fileParts(store.RoleTool, parts)
	require.JSONEq(t, string(result), string(got[0].Result))

	got = view{}.fileParts(store.RoleTool, parts)
	require.JSONEq(t, `{"content":[{"type":"image","mimeType":"image/png","bytes":3},{"type":"audio","mimeType":"audio/wav","bytes":3,"data":"AQID"}]}`,
		string(got[0].Result))
	require.JSONEq(t, string(result), string(parts[0].Result), "the stored parts are unchanged")
}
