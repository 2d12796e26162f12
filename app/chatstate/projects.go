package chatstate

import (
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// checkProject is the rule for a chat's project: it exists and belongs to
// the chat's owner (an admin cannot put someone's chat into their own
// project, nor the other way round). The projects' rows themselves are
// app/projects'; a chat's project_id is chat state and written here.
func (t *Tx) checkProject(owner uuid.UUID, project uuid.NullUUID) error {
	if !project.Valid {
		return nil
	}
	p, err := t.tx.ProjectGet(t.ctx, project.UUID)
	if errors.Is(err, store.ErrNotFound) || err == nil && p.OwnerID != owner {
		return invalid("project_id", "project %s does not exist", project.UUID)
	}
	if err != nil {
		return fmt.Errorf("read project %s: %w", project.UUID, err)
	}
	return nil
}

// moveFamilyToProject sets the project of a root chat and of every chat in
// its family (children follow their root), locking the root first and the
// descendants after it, as the family rules say.
func (t *Tx) moveFamilyToProject(root store.Chat, project uuid.NullUUID) error {
	if root.ParentChatID.Valid {
		return invalid("project_id", "a subagent chat is in its root chat's project; change the root chat's")
	}
	if err := t.checkProject(root.OwnerID, project); err != nil {
		return err
	}
	if root.ProjectID == project {
		return nil
	}
	family, err := t.tx.ChatDescendants(t.ctx, root.ID)
	if err != nil {
		return fmt.Errorf("read family of chat %s: %w", root.ID, err)
	}
	for _, c := range append([]store.Chat{root}, family...) {
		if _, _, err := t.lock(c.ID); err != nil {
			return err
		}
		if _, err := t.tx.ChatUpdate(t.ctx, c.ID, store.ChatPatch{ProjectID: store.Some(project)}); err != nil {
			return fmt.Errorf("move chat %s to project: %w", c.ID, err)
		}
	}
	return nil
}
