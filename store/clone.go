package store

import (
	"maps"
	"slices"
)

// Clone returns a copy of c that shares no memory with it, so a cached row
// can be handed out without a caller's change reaching the next reader.
func (c Chat) Clone() Chat {
	c.LastError = slices.Clone(c.LastError)
	c.RetryState = slices.Clone(c.RetryState)
	c.DynamicTools = slices.Clone(c.DynamicTools)
	c.ToolApprovals = slices.Clone(c.ToolApprovals)
	c.Labels = maps.Clone(c.Labels)
	c.MCPServerIDs = slices.Clone(c.MCPServerIDs)
	c.RequiresActionDeadlineAt = clonePtr(c.RequiresActionDeadlineAt)
	c.CompactionRequestedAt = clonePtr(c.CompactionRequestedAt)
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
