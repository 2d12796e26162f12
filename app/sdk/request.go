package sdk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/jcs"
)

// Endpoints of a durable request, as RequestBinding.Endpoint names them.
const (
	EndpointCreateChat  = "create_chat"  // POST /chats
	EndpointSendMessage = "send_message" // POST /chats/{chat}/messages
)

// RequestBinding is what a durable request's request_sha256 binds its
// request_id to: the endpoint, the chat and every field of the request
// that changes what runs. Every key is always present (docs/API.md lists
// the value of each when the request does not have it); request_sha256 is
// the hex SHA-256 of its RFC 8785 canonical JSON. A field added to the
// requests that changes what runs is one more field here.
type RequestBinding struct {
	Endpoint string `json:"endpoint"`
	// ChatID is the chat of send_message; null for create_chat.
	ChatID *uuid.UUID `json:"chat_id"`
	// Content is the content array exactly as sent; [] when absent.
	Content json.RawMessage `json:"content"`
	// BusyBehavior is send_message's, "queue" when absent; "" for create_chat.
	BusyBehavior    string     `json:"busy_behavior"`
	ModelConfigID   *uuid.UUID `json:"model_config_id"`
	ReasoningEffort string     `json:"reasoning_effort"`
	// The fields of create_chat; "", {}, [] and null for send_message.
	Title              string            `json:"title"`
	SystemPrompt       string            `json:"system_prompt"`
	Labels             map[string]string `json:"labels"`
	UnsafeDynamicTools json.RawMessage   `json:"unsafe_dynamic_tools"` // as sent; [] when absent
	ParentChatID       *uuid.UUID        `json:"parent_chat_id"`
	// MCPServerIDs is create_chat's selection: null for every server
	// (absent or null), else the ids with duplicates removed, in order;
	// null for send_message.
	MCPServerIDs []uuid.UUID `json:"mcp_server_ids"`
	// ProjectID is create_chat's project_id; absent when none, so
	// bindings without a project hash as before.
	ProjectID *uuid.UUID `json:"project_id,omitempty"`
}

// SHA256 is request_sha256: the hex SHA-256 of b's RFC 8785 canonical
// JSON, with absent (or null) arrays as [] and absent labels as {}. It
// fails only for JSON that has no canonical form (a number outside the
// range of a double).
func (b RequestBinding) SHA256() (string, error) {
	canon, err := b.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// Canonical is the RFC 8785 canonical JSON that SHA256 hashes.
func (b RequestBinding) Canonical() ([]byte, error) {
	b.Content = orEmptyArray(b.Content)
	b.UnsafeDynamicTools = orEmptyArray(b.UnsafeDynamicTools)
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	canon, err := jcs.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("canonical request: %w", err)
	}
	return canon, nil
}

func orEmptyArray(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return json.RawMessage(`[]`)
	}
	return raw
}

// CreateChatBinding is the binding of req sent as POST /chats by this
// client.
func CreateChatBinding(req CreateChatRequest) (RequestBinding, error) {
	content, err := json.Marshal(req.Content)
	if err != nil {
		return RequestBinding{}, fmt.Errorf("encode content: %w", err)
	}
	tools, err := json.Marshal(req.UnsafeDynamicTools)
	if err != nil {
		return RequestBinding{}, fmt.Errorf("encode unsafe_dynamic_tools: %w", err)
	}
	return RequestBinding{
		Endpoint: EndpointCreateChat, Content: content, ModelConfigID: req.ModelConfigID,
		ReasoningEffort: req.ReasoningEffort, Title: req.Title, SystemPrompt: req.SystemPrompt,
		Labels: req.Labels, UnsafeDynamicTools: tools, ParentChatID: req.ParentChatID,
		MCPServerIDs: uniqueIDs(req.MCPServerIDs), ProjectID: req.ProjectID,
	}, nil
}

// uniqueIDs drops repeated ids, keeping the first of each; nil stays nil
// and empty stays empty (they mean every server and none).
func uniqueIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return nil
	}
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// SendMessageBinding is the binding of req sent as POST
// /chats/{chat}/messages by this client.
func SendMessageBinding(chatID uuid.UUID, req CreateChatMessageRequest) (RequestBinding, error) {
	content, err := json.Marshal(req.Content)
	if err != nil {
		return RequestBinding{}, fmt.Errorf("encode content: %w", err)
	}
	busy := req.BusyBehavior
	if busy == "" {
		busy = BusyBehaviorQueue
	}
	return RequestBinding{
		Endpoint: EndpointSendMessage, ChatID: &chatID, Content: content, BusyBehavior: busy,
		ModelConfigID: req.ModelConfigID, ReasoningEffort: req.ReasoningEffort,
	}, nil
}

// ContentSHA256 is content_sha256, the older and weaker hash that lookups
// still accept: the hex SHA-256 of the text of the text parts concatenated
// in order.
func ContentSHA256(parts []ChatMessagePart) string {
	h := sha256.New()
	for _, p := range parts {
		if p.Type == PartText {
			h.Write([]byte(p.Text))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
