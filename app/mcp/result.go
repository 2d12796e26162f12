package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxResultText caps the text of one tool result (text blocks, embedded
// resources' text and structuredContent together); what is over is cut
// and marked.
const MaxResultText = 256 << 10

// MaxResultMedia caps the base64 data of the image and audio blocks of one
// tool result together. Their data is kept in the block ("data", base64)
// so the providers that take them give them to the model (Anthropic image
// blocks in the tool result, OpenAI an image part after it); a block over
// the cap keeps only its type, MIME type and size, as embedded blobs do.
const MaxResultMedia = 5 << 20

// ToolError is an MCP result with isError set. The worker records its
// message as the call's error result (is_error); Result is the whole
// converted result, for callers that want the blocks.
type ToolError struct {
	Result json.RawMessage
	msg    string
}

func (e *ToolError) Error() string { return e.msg }

// convertResult turns a tools/call result into the JSON a tool result part
// carries: a single text block is that string; anything else is an object
// {"content": [blocks], "structuredContent": ...}.
func convertResult(res *mcp.CallToolResult) (json.RawMessage, error) {
	budget, media := MaxResultText, MaxResultMedia
	if len(res.Content) == 1 && res.StructuredContent == nil {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			return json.Marshal(capText(t.Text, &budget))
		}
	}
	blocks := make([]map[string]any, 0, len(res.Content))
	for _, c := range res.Content {
		blocks = append(blocks, convertBlock(c, &budget, &media))
	}
	out := map[string]any{"content": blocks}
	if res.StructuredContent != nil {
		sc, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
		if len(sc) <= budget {
			out["structuredContent"] = json.RawMessage(sc)
		} else {
			out["structuredContent"] = fmt.Sprintf("[omitted: %d bytes, over the result limit]", len(sc))
		}
	}
	return json.Marshal(out)
}

func convertBlock(c mcp.Content, budget, media *int) map[string]any {
	switch c := c.(type) {
	case *mcp.TextContent:
		return map[string]any{"type": "text", "text": capText(c.Text, budget)}
	case *mcp.ImageContent:
		return mediaBlock("image", c.MIMEType, c.Data, media)
	case *mcp.AudioContent:
		return mediaBlock("audio", c.MIMEType, c.Data, media)
	case *mcp.ResourceLink:
		b := map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		setNonEmpty(b, "title", c.Title)
		setNonEmpty(b, "description", c.Description)
		setNonEmpty(b, "mimeType", c.MIMEType)
		if c.Size != nil {
			b["size"] = *c.Size
		}
		return b
	case *mcp.EmbeddedResource:
		r := map[string]any{}
		if c.Resource != nil {
			r["uri"] = c.Resource.URI
			setNonEmpty(r, "mimeType", c.Resource.MIMEType)
			if c.Resource.Blob != nil {
				r["bytes"] = len(c.Resource.Blob)
			} else {
				r["text"] = capText(c.Resource.Text, budget)
			}
		}
		return map[string]any{"type": "resource", "resource": r}
	default:
		return map[string]any{"type": fmt.Sprintf("%T", c)}
	}
}

// mediaBlock is an image or audio block: its type, MIME type, size in
// bytes and, while the media budget lasts, its data in base64.
func mediaBlock(typ, mimeType string, data []byte, media *int) map[string]any {
	b := map[string]any{"type": typ, "mimeType": mimeType, "bytes": len(data)}
	if n := base64.StdEncoding.EncodedLen(len(data)); len(data) > 0 && n <= *media {
		*media -= n
		b["data"] = base64.StdEncoding.EncodeToString(data)
	}
	return b
}

func setNonEmpty(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

// capText spends s from budget, cutting it (at a rune boundary) when
// the budget is short.
func capText(s string, budget *int) string {
	if len(s) <= *budget {
		*budget -= len(s)
		return s
	}
	cut := *budget
	for cut > 0 && cut < len(s) && !utf8RuneStart(s[cut]) {
		cut--
	}
	*budget = 0
	return s[:cut] + fmt.Sprintf("\n[truncated: %d more bytes]", len(s)-cut)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// errorText is the message of an isError result: its text blocks, or
// the converted result when it has none.
func errorText(res *mcp.CallToolResult, converted json.RawMessage) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) == 0 {
		return string(converted)
	}
	msg := strings.Join(texts, "\n")
	if len(msg) > MaxResultText {
		budget := MaxResultText
		msg = capText(msg, &budget)
	}
	return msg
}
