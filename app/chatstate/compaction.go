package chatstate

import (
	"slices"

	"github.com/chatd/chatd/store"
)

// SomethingToCompact is the rule both manual and automatic compaction go
// by: among the active messages from the latest boundary on (as
// FromBoundary returns them), an uncompressed assistant message is what a
// compaction would summarise. Without one there is nothing to compact.
func SomethingToCompact(fromBoundary []store.Message) bool {
	return slices.ContainsFunc(fromBoundary, func(m store.Message) bool {
		return m.Role == store.RoleAssistant && !m.Compressed && !m.Deleted
	})
}
