package store

import (
	"context"

	"github.com/google/uuid"
)

// A chat's messages form a tree (issue 32): every message has a parent,
// the previous message of its branch (none for the chat's first message),
// and the versions of a message are the messages that share its parent.
// The active branch is the path from the root to the chat's newest message
// with Deleted false: Deleted means "not on the active branch" (hidden; a
// branch switch shows it again), so a reader that skips deleted rows reads
// the active branch, oldest first, by id. Pruned rows were deleted by an
// edit before versions existed: they belong to no branch and never return.
//
// MessageInsert appends to the active branch: the new row's parent is the
// newest message with Deleted false when it is inserted. Message reads
// fill ParentID, Pruned and SiblingIDs: the ids of every message that is
// not pruned and has the same parent in the same chat (itself included,
// oldest first; empty for a pruned row).

// MessageNode is one message of a chat's tree, without its content.
type MessageNode struct {
	ID       int64
	ParentID *int64
	Role     string
	Deleted  bool
}

// VersionReader reads the tree of a chat's messages.
type VersionReader interface {
	// MessageTree returns every message of the chat that is not pruned,
	// in id order.
	MessageTree(ctx context.Context, chatID uuid.UUID) ([]MessageNode, error)
}
