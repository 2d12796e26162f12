package chatstate

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Charge is the usage of the provider call whose result a step commits:
// it joins the usage ledger in the step's own transaction, so a step that
// does not commit (a lost fence after a takeover, a failed write) records
// nothing and one that does records exactly once.
type Charge struct {
	// Kind is store.UsageKindStep, UsageKindCompaction or UsageKindTitle.
	Kind          string
	ModelConfigID uuid.NullUUID
	Provider      string
	Model         string
	store.UsageTokens
}

// stepUsageKey is the idempotency key of a step's charge: a chat commits
// at most one step per history version (a second one is refused by the
// fence), so the key names the call whose result moved it.
func stepUsageKey(c store.Chat) string {
	return fmt.Sprintf("step:%s:%d", c.ID, c.HistoryVersion)
}

// recordCharge writes ch to the ledger for chat c's owner (a subagent's
// owner is its parent's), linked to the newest assistant message among
// msgs (the one the call produced).
func (t *Tx) recordCharge(c store.Chat, key string, ch Charge, msgs []store.Message) error {
	var messageID int64
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == store.RoleAssistant {
			messageID = msgs[i].ID
			break
		}
	}
	_, err := t.tx.UsageRecord(t.ctx, store.UsageRecord{
		Key: key, UserID: c.OwnerID, ChatID: c.ID, MessageID: messageID, Kind: ch.Kind,
		ModelConfigID: ch.ModelConfigID, Provider: ch.Provider, Model: ch.Model,
		UsageTokens: ch.UsageTokens, CreatedAt: t.now,
	})
	if err != nil {
		return fmt.Errorf("record usage of chat %s: %w", c.ID, err)
	}
	return nil
}

// RecordTitleUsage records a title call's usage in the bundle that writes
// its title (key: the call's own id, so a title is counted once).
func (t *Tx) RecordTitleUsage(chatID uuid.UUID, callID uuid.UUID, ch Charge) error {
	c, err := t.tx.ChatGet(t.ctx, chatID)
	if err != nil {
		return fmt.Errorf("read chat %s: %w", chatID, err)
	}
	ch.Kind = store.UsageKindTitle
	return t.recordCharge(c, "title:"+callID.String(), ch, nil)
}
