package chatstate

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// CreateParams create a chat.
type CreateParams struct {
	ID           uuid.UUID
	OwnerID      uuid.UUID
	ParentChatID uuid.NullUUID
	Title        string
	TitleSource  store.TitleSource
	SystemPrompt string
	Labels       map[string]string
	DynamicTools json.RawMessage
	// MCPServerIDs restricts the chat's MCP servers: nil is every
	// configured server, empty none.
	MCPServerIDs []uuid.UUID
	// ToolApproval is the chat's own tool approval policy (never when
	// empty); it tightens the configured one, never loosens it.
	ToolApproval string
	Input        UserInput // empty Content creates the chat in waiting
	// ProjectID puts the chat in a project of its owner. A child chat is
	// in its parent's project whatever this says.
	ProjectID uuid.NullUUID
	// Copy is a fork's history (Fork): copied in order instead of a system
	// prompt and a first message; the chat starts waiting.
	Copy []store.Message
}

// Create applies N -> Create -> R0 (or W with no user message). The chat
// does not exist yet, so the guard finds no row to lock; a child locks its
// family's root FOR SHARE and fails when the root is archived. The result
// carries the initial history (hook context, first message) in Messages;
// the system prompt is kept beside the chat (store.SystemPromptTx).
func (t *Tx) Create(p CreateParams) (Result, error) {
	if p.ID == uuid.Nil {
		p.ID = uuid.New()
	}
	s, err := t.begin(p.ID, Create)
	if err != nil {
		return Result{}, err
	}
	if err := checkApprovalPolicy("tool_approval", p.ToolApproval); err != nil {
		return Result{}, err
	}
	var root uuid.NullUUID
	if p.ParentChatID.Valid {
		parent, err := t.tx.ChatGet(t.ctx, p.ParentChatID.UUID)
		if err != nil {
			return Result{}, fmt.Errorf("parent chat %s: %w", p.ParentChatID.UUID, err)
		}
		root = uuid.NullUUID{UUID: parent.Root(), Valid: true}
		p.ProjectID = parent.ProjectID
		rc, err := t.tx.ChatLockShared(t.ctx, root.UUID)
		if err != nil {
			return Result{}, fmt.Errorf("lock root chat %s: %w", root.UUID, err)
		}
		if rc.Archived {
			rootState, err := t.classify(rc)
			if err != nil {
				return Result{}, err
			}
			cause := ErrChatArchived
			if rootState == StateInvalid {
				cause = ErrInvalidState
			}
			return Result{}, &TransitionError{Transition: Create, From: StateN, Cause: cause,
				Reason: "the family's root chat is archived"}
		}
	}
	if err := t.checkProject(p.OwnerID, p.ProjectID); err != nil {
		return Result{}, err
	}
	if err := checkHookContext(p.Input.Context); err != nil {
		return Result{}, err
	}
	status := store.ChatStatusWaiting
	var content json.RawMessage
	if len(p.Input.Content) > 0 && len(p.Copy) == 0 {
		status = store.ChatStatusRunning
		var err error
		if content, err = p.Input.encode("content"); err != nil {
			return Result{}, err
		}
	}
	source := p.TitleSource
	if source == "" {
		source = store.TitleSourceFallback
	}
	c, err := t.tx.ChatInsert(t.ctx, store.ChatInsertParams{
		ID: p.ID, OwnerID: p.OwnerID, ParentChatID: p.ParentChatID, RootChatID: root,
		Title: p.Title, TitleSource: source, Status: status, Labels: p.Labels,
		LastModelConfigID: p.Input.ModelConfigID, LastReasoningEffort: p.Input.ReasoningEffort,
		DynamicTools: p.DynamicTools, MCPServerIDs: p.MCPServerIDs, ToolApproval: p.ToolApproval, Now: t.now,
		ProjectID: p.ProjectID,
	})
	if err != nil {
		return Result{}, fmt.Errorf("insert chat: %w", err)
	}
	t.touched = append(t.touched, c.ID)
	if len(p.Copy) > 0 {
		if err := t.insertCopy(c.ID, p.Copy); err != nil {
			return Result{}, err
		}
	}
	// The system prompt is the chat's metadata, not a message: the worker
	// reads it at every model call (PATCH /chats/{chat} may change it).
	if p.SystemPrompt != "" {
		if err := t.tx.ChatSystemPromptSet(t.ctx, c.ID, p.SystemPrompt, t.now); err != nil {
			return Result{}, fmt.Errorf("write system prompt: %w", err)
		}
	}
	// Hook context (session_start, user_prompt_submit) precedes the first
	// message; a chat created empty keeps it for its first prompt.
	if err := t.insertHookContext(c.ID, p.Input.Context); err != nil {
		return Result{}, err
	}
	var first *store.Message
	if content != nil {
		if err := t.linkFiles(c.ID, p.Input); err != nil {
			return Result{}, err
		}
		m, err := t.insertMessage(store.MessageInsertParams{
			ChatID: c.ID, Role: store.RoleUser, Content: content, CreatedBy: p.Input.CreatedBy,
			ModelConfigID: p.Input.ModelConfigID, ReasoningEffort: p.Input.ReasoningEffort,
			RequestID: p.Input.RequestID, Now: t.now,
		})
		if err != nil {
			return Result{}, fmt.Errorf("insert first message: %w", err)
		}
		first = &m
	}
	if len(t.inserted) == s.mark {
		// Create's snapshot is the chat's first history version even when
		// it inserts no message.
		if _, err := t.tx.ChatTouchHistory(t.ctx, c.ID); err != nil {
			return Result{}, err
		}
	}
	res, err := s.end()
	res.Message = first
	return res, err
}
