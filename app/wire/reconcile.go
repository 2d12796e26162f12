package wire

import (
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ToReconcileResponse is the answer to an operator's review: the request
// reviewed (nil for a tool call of a turn sent without one), the chat
// after it (zero when gone) and the calls that got the reviewed result.
func ToReconcileResponse(inv *store.Invocation, chat store.Chat, toolCallIDs []string) sdk.ReconcileResponse {
	out := sdk.ReconcileResponse{ToolCallIDs: toolCallIDs}
	if out.ToolCallIDs == nil {
		out.ToolCallIDs = []string{}
	}
	if inv != nil {
		id, audit := inv.RequestID, inv.AuditID
		out.RequestID, out.AuditID, out.State = &id, &audit, string(inv.State)
	}
	if chat.ID != uuid.Nil {
		c := ToChat(chat)
		out.Chat = &c
	}
	return out
}
