package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// ExportFormat names the JSON of GET /chats/{chat}/export?format=json;
// ExportVersion is its version (an import refuses other versions).
const (
	ExportFormat  = "chatd.chat"
	ExportVersion = 1
)

// CodeImportUnsupported: POST /chats/import of a document that is not a
// chatd chat export, or of a version this server does not read (400).
const CodeImportUnsupported = "IMPORT_UNSUPPORTED"

// ChatExport is a chat's lossless export (GET /chats/{chat}/export
// ?format=json) and the body of POST /chats/import.
type ChatExport struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// ExportID is fresh for every export: importing one export twice
	// answers the chat the first import made.
	ExportID   uuid.UUID           `json:"export_id"`
	ExportedAt time.Time           `json:"exported_at"`
	Chat       ChatExportChat      `json:"chat"`
	Messages   []ChatExportMessage `json:"messages"`
	// Files are the files the messages reference; Content is set (base64
	// in JSON) only in an export made with files=inline.
	Files []ChatExportFile `json:"files"`
}

// ChatExportChat is the exported chat's metadata.
type ChatExportChat struct {
	ID                  uuid.UUID         `json:"id"`
	Title               string            `json:"title"`
	SystemPrompt        string            `json:"system_prompt"`
	LastModelConfigID   *uuid.UUID        `json:"last_model_config_id"`
	LastReasoningEffort string            `json:"last_reasoning_effort,omitempty"`
	ProjectID           *uuid.UUID        `json:"project_id"`
	Labels              map[string]string `json:"labels"`
	ToolApproval        string            `json:"tool_approval"`
	UnsafeDynamicTools  []DynamicTool     `json:"unsafe_dynamic_tools"`
	MCPServerIDs        []uuid.UUID       `json:"mcp_server_ids"`
	CreatedAt           time.Time         `json:"created_at"`
}

// ChatExportMessage is one message of the exported chat's active branch,
// oldest first, model-only rows (compaction summaries) included.
type ChatExportMessage struct {
	ID   int64  `json:"id"`
	Role string `json:"role"`
	// Visibility is both, user (people only) or model (the model only).
	Visibility      string            `json:"visibility"`
	Compressed      bool              `json:"compressed,omitempty"`
	Content         []ChatMessagePart `json:"content"`
	ModelConfigID   *uuid.UUID        `json:"model_config_id,omitempty"`
	ReasoningEffort string            `json:"reasoning_effort,omitempty"`
	Usage           *ChatMessageUsage `json:"usage,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
}

// ChatExportFile is a file a message references.
type ChatExportFile struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type"`
	Size      int64     `json:"size"`
	Content   []byte    `json:"content,omitempty"`
}

// ExportOptions choose an export's form.
type ExportOptions struct {
	// Format is "json" (the default) or "markdown".
	Format string
	// InlineFiles puts the files' bytes into a JSON export.
	InlineFiles bool
}

// ExportChatRaw returns a chat's export as the server sent it, with the
// file name the server suggests.
func (c *Client) ExportChatRaw(ctx context.Context, id uuid.UUID, opts ExportOptions) ([]byte, string, error) {
	q := url.Values{}
	if opts.Format != "" {
		q.Set("format", opts.Format)
	}
	if opts.InlineFiles {
		q.Set("files", "inline")
	}
	path := "/chats/" + id.String() + "/export"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.raw(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read export of chat %s: %w", id, err)
	}
	name := ""
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		name = params["filename"]
	}
	return raw, name, nil
}

// ExportChat returns a chat's JSON export.
func (c *Client) ExportChat(ctx context.Context, id uuid.UUID, inlineFiles bool) (ChatExport, error) {
	raw, _, err := c.ExportChatRaw(ctx, id, ExportOptions{Format: "json", InlineFiles: inlineFiles})
	if err != nil {
		return ChatExport{}, err
	}
	var out ChatExport
	if err := json.Unmarshal(raw, &out); err != nil {
		return ChatExport{}, fmt.Errorf("decode export of chat %s: %w", id, err)
	}
	return out, nil
}

// ImportChat imports a JSON export (POST /chats/import) as a new chat of
// the caller. created is false when the caller had imported this export
// before: the answer is the chat that import made.
func (c *Client) ImportChat(ctx context.Context, export ChatExport) (chat Chat, created bool, err error) {
	raw, err := json.Marshal(export)
	if err != nil {
		return Chat{}, false, fmt.Errorf("encode export: %w", err)
	}
	resp, err := c.raw(ctx, http.MethodPost, "/chats/import", "application/json", bytes.NewReader(raw))
	if err != nil {
		return Chat{}, false, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&chat); err != nil {
		return Chat{}, false, fmt.Errorf("decode import answer: %w", err)
	}
	return chat, resp.StatusCode == http.StatusCreated, nil
}
