package chatstate

import (
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// MetadataAllowed is the rule for changes that are not transitions (title,
// labels, pin, delete): a chat in an invalid state must be reconciled
// first (ErrInvalidState), and an archived chat unarchived first
// (ErrChatArchived) when the change mutates it.
func MetadataAllowed(st State, mutates bool) error {
	switch {
	case st == StateInvalid:
		return fmt.Errorf("metadata change not allowed from %s: %w", st, ErrInvalidState)
	case st.Archived() && mutates:
		return fmt.Errorf("metadata change not allowed from %s: %w", st, ErrChatArchived)
	}
	return nil
}

// MetadataChange is a person's change of a chat's metadata; nil fields
// stay as they are.
type MetadataChange struct {
	// Archived archives or unarchives the chat's family (a transition, and
	// the one change an archived chat allows).
	Archived *bool
	// Title is a user title (it outranks every other title source).
	Title *string
	// Labels replace the chat's labels.
	Labels *map[string]string
	// PinOrder pins the chat (0 unpins).
	PinOrder *int64
	// MCPServerIDs, when set, replaces the chat's MCP server selection: a
	// nil value is every configured server, an empty one none.
	MCPServerIDs store.Opt[[]uuid.UUID]
	// ToolApproval sets the chat's own tool approval policy (never,
	// effectful or always). It combines with the configured policy as the
	// stricter of the two, so it can tighten it but never loosen it; a
	// change applies to the calls of later steps.
	ToolApproval *string
	// ProjectID, when set, moves a root chat and its family into a project
	// of the chat's owner (an unset value: out of any).
	ProjectID store.Opt[uuid.NullUUID]
	// SystemPrompt replaces the chat's system prompt ("" removes it). It
	// is metadata, not execution state: allowed while a turn runs, read
	// by the worker at the next model call.
	SystemPrompt *string
}

func (c MetadataChange) mutates() bool {
	return c.Title != nil || c.Labels != nil || c.PinOrder != nil || c.MCPServerIDs.Set || c.ToolApproval != nil ||
		c.ProjectID.Set || c.SystemPrompt != nil
}

// UpdateMetadata applies a metadata change under MetadataAllowed: an
// archived chat accepts other changes only together with its unarchiving.
// Only a change of archived is a transition; title, labels, pin and the
// MCP server selection are written without one (and without touching
// updated_at). The worker reads the selection at every generation step, so
// a change applies from the next step on.
func (t *Tx) UpdateMetadata(chatID uuid.UUID, c MetadataChange) (Result, error) {
	chat, st, err := t.Peek(chatID)
	if err != nil {
		return Result{}, err
	}
	if st == StateN {
		return Result{}, &notFoundError{what: "chat " + chatID.String()}
	}
	unarchive := c.Archived != nil && !*c.Archived
	if err := MetadataAllowed(st, c.mutates() && !unarchive); err != nil {
		return Result{}, err
	}
	if c.Archived != nil && *c.Archived != chat.Archived {
		if _, err := t.SetArchivedFamily(chatID, *c.Archived); err != nil {
			return Result{}, err
		}
	}
	if c.ProjectID.Set {
		if err := t.moveFamilyToProject(chat, c.ProjectID.Value); err != nil {
			return Result{}, err
		}
	}
	if c.Title != nil {
		if _, err := t.WriteTitle(chatID, *c.Title, store.TitleSourceUser); err != nil {
			return Result{}, err
		}
	}
	if c.SystemPrompt != nil {
		if err := t.tx.ChatSystemPromptSet(t.ctx, chatID, *c.SystemPrompt, t.now); err != nil {
			return Result{}, err
		}
	}
	var p store.ChatPatch
	if c.Labels != nil {
		p.Labels = store.Some(*c.Labels)
	}
	if c.PinOrder != nil {
		p.PinOrder = store.Some(*c.PinOrder)
		// Like a title, a pin is no state change, but the owner's other
		// tabs (the chat-list watch) hear of it.
		if *c.PinOrder != chat.PinOrder && !slices.Contains(t.titled, chatID) {
			t.titled = append(t.titled, chatID)
		}
	}
	p.MCPServerIDs = c.MCPServerIDs
	if c.ToolApproval != nil {
		if err := checkApprovalPolicy("tool_approval", *c.ToolApproval); err != nil {
			return Result{}, err
		}
		p.ToolApproval = store.Some(*c.ToolApproval)
	}
	if p.Labels.Set || p.PinOrder.Set || p.MCPServerIDs.Set || p.ToolApproval.Set {
		if _, err := t.tx.ChatUpdate(t.ctx, chatID, p); err != nil {
			return Result{}, fmt.Errorf("update metadata of chat %s: %w", chatID, err)
		}
	}
	after, st, err := t.Peek(chatID)
	if err != nil {
		return Result{}, err
	}
	return Result{Chat: after, State: st}, nil
}
