package chatstate

import (
	"errors"
	"fmt"
	"time"

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

// ErrNotArchivable: a chat the auto-archive loop read as a candidate no
// longer qualifies once it is locked (a message arrived, it was pinned or
// archived, it started running, ...). AutoArchive changed nothing.
var ErrNotArchivable = errors.New("chat no longer qualifies for auto-archive")

// AutoArchiveCutoff is the auto-archive cutoff (spec: "Auto-archive
// loop"): 00:00 UTC of now's day minus days.
func AutoArchiveCutoff(now time.Time, days int) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -days)
}

// AutoArchive archives an old, unused root chat family the way PATCH
// archived=true does (SetArchivedFamily), after locking the root and then
// every descendant and rechecking, under those locks, the candidate rules
// of store.Reader.ChatListArchivable against cutoff: the candidate read
// holds no lock, so a message may have arrived since. A family that no
// longer qualifies is not archived and the error wraps ErrNotArchivable;
// the caller rolls the bundle back, so nothing changed.
func (t *Tx) AutoArchive(rootID uuid.UUID, cutoff time.Time) (Result, error) {
	skip := func(reason string) error {
		return fmt.Errorf("auto-archive chat %s: %s: %w", rootID, reason, ErrNotArchivable)
	}
	root, st, err := t.LockState(rootID)
	if err != nil {
		return Result{}, err
	}
	switch {
	case st == StateN:
		return Result{}, skip("it no longer exists")
	case root.RootChatID.Valid:
		return Result{}, skip("it is not a root chat")
	case root.Archived:
		return Result{}, skip("it is archived")
	case root.PinOrder != 0:
		return Result{}, skip("it is pinned")
	case !root.CreatedAt.Before(cutoff):
		return Result{}, skip("it was created after the cutoff")
	}
	if err := archivable(root, st); err != nil {
		return Result{}, skip(err.Error())
	}
	family, err := t.tx.ChatDescendants(t.ctx, rootID)
	if err != nil {
		return Result{}, fmt.Errorf("list family of chat %s: %w", rootID, err)
	}
	for _, member := range parentsFirst(rootID, family) {
		c, st, err := t.LockState(member.ID)
		if err != nil {
			return Result{}, err
		}
		if err := archivable(c, st); err != nil {
			return Result{}, skip(fmt.Sprintf("its descendant %s: %s", member.ID, err))
		}
	}
	newest, ok, err := t.tx.MessageNewestInFamily(t.ctx, rootID)
	if err != nil {
		return Result{}, err
	}
	if ok && !newest.Before(cutoff) {
		return Result{}, skip("its family has a message after the cutoff")
	}
	return t.SetArchivedFamily(rootID, true)
}

// archivable is the per-member status rule of auto-archive: no running,
// interrupting or requires_action work, and a state SetArchived(true) may
// leave (an invalid chat, or a descendant archived on its own, would fail
// the family's archive as it fails PATCH).
func archivable(c store.Chat, st State) error {
	if isRunnableStatus(c.Status) {
		return fmt.Errorf("it is %s", c.Status)
	}
	if _, ok := Allowed(st, SetArchivedTrue); !ok {
		return fmt.Errorf("it cannot be archived from %s", st)
	}
	return nil
}
