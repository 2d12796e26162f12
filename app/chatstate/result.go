package chatstate

import (
	"time"

	"github.com/chatd/chatd/store"
)

// Result is what a transition did; every transition method returns one.
// Chat and State are always set; the other fields are outputs only some
// transitions have, left empty by the rest.
type Result struct {
	// Chat is the chat row after the transition. For Delete it is the row
	// as it was deleted.
	Chat store.Chat
	// State is the execution state the chat landed in (StateN after
	// Delete). Ownership transitions leave it as it was.
	State State
	// Messages are the messages the transition appended to history, in
	// order: user messages, steps, submitted and synthetic tool results,
	// boundaries. It includes those of a transition applied in the same
	// call (an unowned chat's interruption finished at once).
	Messages []store.Message
	// Promoted are the user turns among Messages: a message sent, edited
	// or created straight into history, and queued messages promoted.
	Promoted []store.Message
	// PromotedQueuedAt is the created_at of the queue row a message in
	// Promoted came from (nil: none came from the queue): the start of
	// its queue_wait.
	PromotedQueuedAt *time.Time
	// Message is the user message the transition was given, once it is in
	// history: Create's first message, SendMessage's message (also when
	// it was queued and promoted at once), EditMessage's replacement, and
	// the message PromoteQueuedMessage moved into history at once.
	Message *store.Message
	// Queued is SendMessage's queue row while the message stays queued.
	Queued *store.QueuedMessage
	// DeletedIDs are the messages that left the active branch (EditMessage,
	// RegenerateMessage, SwitchBranch): hidden, not gone.
	DeletedIDs []int64
	// Members are the other chats a family operation applied to, parents
	// first: SetArchivedFamily's descendants after the change, Delete's
	// descendants as they were deleted.
	Members []store.Chat
}
