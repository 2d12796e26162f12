package chatstate

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
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
	Input        UserInput // empty Content creates the chat in waiting
}

// CreateResult is the created chat and its initial history.
type CreateResult struct {
	Chat     store.Chat
	Messages []store.Message
	State    State
}

// Create applies N -> Create -> R0 (or W with no user message). The chat
// does not exist yet, so there is no row to lock; a child locks its
// family's root FOR SHARE and fails when the root is archived.
func (t *Tx) Create(p CreateParams) (CreateResult, error) {
	if p.ID == uuid.Nil {
		p.ID = uuid.New()
	}
	var root uuid.NullUUID
	if p.ParentChatID.Valid {
		parent, err := t.tx.ChatGet(t.ctx, p.ParentChatID.UUID)
		if err != nil {
			return CreateResult{}, fmt.Errorf("parent chat %s: %w", p.ParentChatID.UUID, err)
		}
		root = uuid.NullUUID{UUID: parent.Root(), Valid: true}
		rc, err := t.tx.ChatLockShared(t.ctx, root.UUID)
		if err != nil {
			return CreateResult{}, fmt.Errorf("lock root chat %s: %w", root.UUID, err)
		}
		if rc.Archived {
			rootState, err := t.classify(rc)
			if err != nil {
				return CreateResult{}, err
			}
			cause := ErrChatArchived
			if rootState == StateInvalid {
				cause = ErrInvalidState
			}
			return CreateResult{}, &TransitionError{Transition: Create, From: StateN, Cause: cause,
				Reason: "the family's root chat is archived"}
		}
	}
	status := store.ChatStatusWaiting
	var content json.RawMessage
	if len(p.Input.Content) > 0 {
		status = store.ChatStatusRunning
		var err error
		if content, err = p.Input.encode("content"); err != nil {
			return CreateResult{}, err
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
		DynamicTools: p.DynamicTools, Now: t.now,
	})
	if err != nil {
		return CreateResult{}, fmt.Errorf("insert chat: %w", err)
	}
	t.touched = append(t.touched, c.ID)
	var msgs []store.Message
	if p.SystemPrompt != "" {
		sys, _ := EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: p.SystemPrompt}})
		m, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
			ChatID: c.ID, Role: store.RoleSystem, Content: sys, Visibility: store.VisibilityModel, Now: t.now,
		})
		if err != nil {
			return CreateResult{}, fmt.Errorf("insert system prompt: %w", err)
		}
		msgs = append(msgs, m)
	}
	if content != nil {
		m, err := t.tx.MessageInsert(t.ctx, store.MessageInsertParams{
			ChatID: c.ID, Role: store.RoleUser, Content: content, CreatedBy: p.Input.CreatedBy,
			ModelConfigID: p.Input.ModelConfigID, ReasoningEffort: p.Input.ReasoningEffort,
			RequestID: p.Input.RequestID, Now: t.now,
		})
		if err != nil {
			return CreateResult{}, fmt.Errorf("insert first message: %w", err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		// Create's snapshot is the chat's first history version even when
		// it inserts no message.
		if _, err := t.tx.ChatTouchHistory(t.ctx, c.ID); err != nil {
			return CreateResult{}, err
		}
	}
	s := &step{t: t, tr: Create, chat: c, from: StateN, outs: matrix[StateN][Create]}
	to, err := s.end()
	if err != nil {
		return CreateResult{}, err
	}
	c, err = t.tx.ChatGet(t.ctx, c.ID)
	return CreateResult{Chat: c, Messages: msgs, State: to}, err
}
