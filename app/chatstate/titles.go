package chatstate

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// DefaultTitle is the fallback title of a chat created without a message.
const DefaultTitle = "New Chat"

// FallbackTitle derives a title from the first prompt: its first line,
// whitespace collapsed, cut at max runes on a word boundary.
func FallbackTitle(prompt string, max int) string {
	line := strings.TrimSpace(prompt)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = strings.Join(strings.FieldsFunc(line, unicode.IsSpace), " ")
	if line == "" {
		return DefaultTitle
	}
	runes := []rune(line)
	if len(runes) <= max {
		return line
	}
	cut := string(runes[:max])
	if i := strings.LastIndex(cut, " "); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:-") + "…"
}

// WriteTitle writes a title when the current source ranks the same as or
// lower than src (fallback < generated < user). Titles are metadata: the
// write takes no transition (no snapshot bump, no notification), sets
// title_updated_at and leaves updated_at. It reports whether the title
// was written.
func (t *Tx) WriteTitle(chatID uuid.UUID, title string, src store.TitleSource) (bool, error) {
	// Lock the row: a concurrent user title must not slip in between the
	// rank check and the write.
	c, err := t.tx.ChatLock(t.ctx, chatID)
	if err != nil {
		return false, fmt.Errorf("lock chat %s: %w", chatID, err)
	}
	if c.TitleSource.Rank() > src.Rank() {
		return false, nil
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		Title: store.Some(title), TitleSource: store.Some(src), TitleUpdatedAt: store.Some(t.now),
	}); err != nil {
		return false, fmt.Errorf("write title of chat %s: %w", chatID, err)
	}
	// Not a state change (no snapshot bump, no chat:update), but the
	// owner's chat-list watch hears of it.
	if !slices.Contains(t.titled, chatID) {
		t.titled = append(t.titled, chatID)
	}
	return true, nil
}
