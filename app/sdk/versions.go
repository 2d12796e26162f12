package sdk

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"
)

// Message versions (issue 32): a chat's messages form a tree. Every
// ChatMessage carries parent_id (null for a chat's first message) and
// sibling_ids (every version of the message, itself included, oldest
// first); a chat shows one branch at a time, its active branch.

// RegenerateMessageRequest is the (optional) body of POST
// /chats/{chat}/messages/{message}/regenerate.
type RegenerateMessageRequest struct {
	ModelConfigID   *uuid.UUID `json:"model_config_id,omitempty"`
	ReasoningEffort string     `json:"reasoning_effort,omitempty"`
}

// SwitchBranchRequest is the body of POST /chats/{chat}/branch.
type SwitchBranchRequest struct {
	MessageID int64 `json:"message_id"`
}

// BranchResponse answers a regenerate and a branch switch: the chat, the
// messages that left the active branch (hidden, not deleted), and for a
// switch the active branch people see, oldest first.
type BranchResponse struct {
	Chat              Chat          `json:"chat"`
	Messages          []ChatMessage `json:"messages,omitempty"`
	DeletedMessageIDs []int64       `json:"deleted_message_ids"`
}

// ForkChatRequest is the body of POST /chats/{chat}/fork.
type ForkChatRequest struct {
	MessageID int64  `json:"message_id"`
	Title     string `json:"title,omitempty"`
}

// RegenerateMessage asks for a new version of an assistant reply.
func (c *Client) RegenerateMessage(ctx context.Context, id uuid.UUID, messageID int64, req RegenerateMessageRequest) (BranchResponse, error) {
	var out BranchResponse
	return out, c.Do(ctx, http.MethodPost, fmt.Sprintf("/chats/%s/messages/%d/regenerate", id, messageID), req, &out)
}

// SwitchBranch makes the branch through a message the chat's active one.
func (c *Client) SwitchBranch(ctx context.Context, id uuid.UUID, messageID int64) (BranchResponse, error) {
	var out BranchResponse
	return out, c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/branch", SwitchBranchRequest{MessageID: messageID}, &out)
}

// BranchMessages reads the branch through a message without switching to it.
func (c *Client) BranchMessages(ctx context.Context, id uuid.UUID, messageID int64) (ChatMessagesResponse, error) {
	var out ChatMessagesResponse
	path := "/chats/" + id.String() + "/messages?message_id=" + strconv.FormatInt(messageID, 10)
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// ForkChat creates a chat whose history is a copy of the branch up to a message.
func (c *Client) ForkChat(ctx context.Context, id uuid.UUID, req ForkChatRequest) (Chat, error) {
	var out Chat
	return out, c.Do(ctx, http.MethodPost, "/chats/"+id.String()+"/fork", req, &out)
}
