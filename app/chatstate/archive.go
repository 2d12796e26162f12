package chatstate

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// SetArchived archives or unarchives one chat (not its family; see
// SetArchivedFamily). Unarchiving a child is refused while its parent is
// archived.
func (t *Tx) SetArchived(chatID uuid.UUID, archived bool) (Result, error) {
	tr := SetArchivedFalse
	if archived {
		tr = SetArchivedTrue
	}
	s, err := t.begin(chatID, tr)
	if err != nil {
		return Result{}, err
	}
	if !archived && s.chat.ParentChatID.Valid {
		parent, err := t.tx.ChatGet(t.ctx, s.chat.ParentChatID.UUID)
		if err != nil {
			return Result{}, fmt.Errorf("parent chat %s: %w", s.chat.ParentChatID.UUID, err)
		}
		if parent.Archived {
			return Result{}, &TransitionError{Transition: tr, From: s.from, Reason: "its parent chat is archived"}
		}
	}
	if err := t.update(chatID, store.ChatPatch{Archived: store.Some(archived)}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// SetArchivedFamily applies SetArchived to a root chat and all its
// descendants atomically: the root's row is locked first (child creation
// takes a shared lock on it), then each descendant. Any member that cannot
// take the transition fails the whole operation. For a non-root chat it is
// SetArchived on that chat alone. The result is the root's, with the
// descendants in Members.
func (t *Tx) SetArchivedFamily(chatID uuid.UUID, archived bool) (Result, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return Result{}, err
	}
	if st == StateN || c.RootChatID.Valid {
		return t.SetArchived(chatID, archived)
	}
	family, err := t.tx.ChatDescendants(t.ctx, chatID)
	if err != nil {
		return Result{}, fmt.Errorf("list family of chat %s: %w", chatID, err)
	}
	// Parents go before their children, so an unarchived child never sees
	// an archived parent.
	res, err := t.SetArchived(chatID, archived)
	if err != nil {
		return Result{}, err
	}
	for _, member := range parentsFirst(chatID, family) {
		mr, err := t.SetArchived(member.ID, archived)
		if err != nil {
			return Result{}, fmt.Errorf("chat %s in the family of %s: %w", member.ID, chatID, err)
		}
		res.Members = append(res.Members, mr.Chat)
	}
	return res, nil
}

// parentsFirst orders a family breadth-first from the root.
func parentsFirst(root uuid.UUID, family []store.Chat) []store.Chat {
	children := map[uuid.UUID][]store.Chat{}
	for _, c := range family {
		parent := root
		if c.ParentChatID.Valid {
			parent = c.ParentChatID.UUID
		}
		children[parent] = append(children[parent], c)
	}
	out := make([]store.Chat, 0, len(family))
	for level := []uuid.UUID{root}; len(level) > 0; {
		var next []uuid.UUID
		for _, id := range level {
			for _, c := range children[id] {
				out = append(out, c)
				next = append(next, c.ID)
			}
		}
		level = next
	}
	return out
}
