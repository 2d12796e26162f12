package chatstate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// ImportParams import a chat export (POST /chats/import): a new chat of
// OwnerID whose history is a copy of Messages.
type ImportParams struct {
	ID      uuid.UUID // zero: a new one
	OwnerID uuid.UUID
	// ExportID is the export's id; an owner imports one export once.
	ExportID        string
	Title           string
	SystemPrompt    string
	Labels          map[string]string
	ToolApproval    string
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	DynamicTools    json.RawMessage
	// ProjectID puts the chat in a project of OwnerID (Create checks it).
	ProjectID uuid.NullUUID
	// Messages are copied in order (role, content, visibility, compressed,
	// model, effort, usage, created_at); their ids are the chat's own.
	Messages []store.Message
	// Files are the owner's unlinked files the messages reference; the
	// new chat holds them.
	Files []uuid.UUID
}

// Import creates a chat from an export like Fork does (Create, landing in
// W: no turn runs; tool calls the copy leaves open get a cancellation),
// links its files and records the import. When OwnerID has imported
// ExportID before and that chat still exists, it writes nothing and
// answers that chat with existing set.
func (t *Tx) Import(p ImportParams) (res Result, existing bool, err error) {
	if p.ExportID == "" {
		return Result{}, false, invalid("id", "the export has no id")
	}
	prior, err := t.tx.ChatImportGet(t.ctx, p.OwnerID, p.ExportID)
	switch {
	case err == nil:
		c, st, err := t.Peek(prior)
		return Result{Chat: c, State: st}, true, err
	case !errors.Is(err, store.ErrNotFound):
		return Result{}, false, err
	}
	res, err = t.Create(CreateParams{
		ID: p.ID, OwnerID: p.OwnerID, Title: p.Title, TitleSource: store.TitleSourceUser,
		SystemPrompt: p.SystemPrompt, Labels: p.Labels, ToolApproval: p.ToolApproval,
		DynamicTools: p.DynamicTools, ProjectID: p.ProjectID,
		Input: UserInput{ModelConfigID: p.ModelConfigID, ReasoningEffort: p.ReasoningEffort},
		Copy:  p.Messages,
	})
	if err != nil {
		return Result{}, false, err
	}
	chatID := res.Chat.ID
	for _, id := range p.Files {
		f, err := t.tx.FileGet(t.ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return Result{}, false, invalid("files", "file %s does not exist", id)
		case err != nil:
			return Result{}, false, err
		case f.OwnerID != p.OwnerID || f.ChatID.Valid:
			return Result{}, false, invalid("files", "file %s is not an unused file of yours", id)
		}
		if err := t.tx.FileLink(t.ctx, id, chatID, t.now); err != nil {
			return Result{}, false, fmt.Errorf("link file %s to imported chat %s: %w", id, chatID, err)
		}
	}
	if err := t.tx.ChatImportInsert(t.ctx, p.OwnerID, p.ExportID, chatID, t.now); err != nil {
		return Result{}, false, err
	}
	return res, false, nil
}
