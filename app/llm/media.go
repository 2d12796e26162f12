package llm

// Documents in user messages and media in tool results.

import (
	"encoding/json"
	"strings"

	"github.com/chatd/chatd/app/sdk"
)

// MediaTypePDF is the media type of PDF documents.
const MediaTypePDF = "application/pdf"

// FileData splits a file part's base64 data: URL into its media type and
// its base64 data.
func FileData(p sdk.ChatMessagePart) (mediaType, base64Data string, ok bool) {
	if p.Type != sdk.PartFile {
		return "", "", false
	}
	rest, found := strings.CutPrefix(p.URL, "data:")
	if !found {
		return "", "", false
	}
	mediaType, base64Data, found = strings.Cut(rest, ";base64,")
	if !found || mediaType == "" || base64Data == "" {
		return "", "", false
	}
	return mediaType, base64Data, true
}

// IsPDFPart reports whether p is a PDF for the model: a file part carrying
// its bytes as a base64 data: URL of application/pdf. The worker gives
// PDFs only to models that read them (files.TakesPDF).
func IsPDFPart(p sdk.ChatMessagePart) bool {
	mediaType, _, ok := FileData(p)
	return ok && mediaType == MediaTypePDF
}

// HasFiles reports whether parts hold an image or a PDF for the model.
func HasFiles(parts []sdk.ChatMessagePart) bool {
	for _, p := range parts {
		if IsImagePart(p) || IsPDFPart(p) {
			return true
		}
	}
	return false
}

// ToolMedia is an image or an audio clip a tool returned: a block of a
// tool result's "content" list {"type":"image"|"audio","mimeType","data"}
// (app/mcp keeps the data of MCP image and audio content there).
type ToolMedia struct {
	Type      string // "image" or "audio"
	MediaType string
	Data      string // base64
}

// IsImage reports whether m is an image of a type models take.
func (m ToolMedia) IsImage() bool {
	switch m.MediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return m.Type == "image"
	}
	return false
}

// AudioFormat is the input_audio format of an audio clip ("wav" or
// "mp3"), "" for a type OpenAI does not take.
func (m ToolMedia) AudioFormat() string {
	if m.Type != "audio" {
		return ""
	}
	switch m.MediaType {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// SplitToolResult separates a tool result into what the model reads as
// text, the result with the data of its image and audio blocks removed
// (each block keeps its type, mimeType and size), and those media in
// order. A result without media is returned unchanged.
func SplitToolResult(result json.RawMessage) (json.RawMessage, []ToolMedia) {
	var media []ToolMedia
	out := FilterToolMedia(result, func(m ToolMedia) bool {
		media = append(media, m)
		return false
	})
	return out, media
}

// FilterToolMedia removes the data of the image and audio blocks of a tool
// result for which keep is false; the block stays as a description.
func FilterToolMedia(result json.RawMessage, keep func(ToolMedia) bool) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil || obj["content"] == nil {
		return result
	}
	var blocks []map[string]any
	if json.Unmarshal(obj["content"], &blocks) != nil {
		return result
	}
	changed := false
	for _, b := range blocks {
		data, _ := b["data"].(string)
		typ, _ := b["type"].(string)
		if data == "" || (typ != "image" && typ != "audio") {
			continue
		}
		mt, _ := b["mimeType"].(string)
		if !keep(ToolMedia{Type: typ, MediaType: mt, Data: data}) {
			delete(b, "data")
			changed = true
		}
	}
	if !changed {
		return result
	}
	content, err := json.Marshal(blocks)
	if err != nil {
		return result
	}
	obj["content"] = content
	out, err := json.Marshal(obj)
	if err != nil {
		return result
	}
	return out
}
