package chatstatetest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// CheckToolResults checks the invariant "every tool call in history has
// exactly one result" over a chat's messages, oldest first: among the
// active (not deleted) messages no call has two results and no result
// answers a call that is not before it. When settled is true (the turn is
// over: the chat is waiting, in error or archived) no call may be left
// without a result either; while a turn runs, its calls may still be
// outstanding. Calls the provider executed itself are the provider's to
// answer and are not counted.
func CheckToolResults(msgs []store.Message, settled bool) error {
	type call struct {
		msg     int64
		results int
	}
	calls := map[string]*call{}
	var order []string
	provider := map[string]bool{}
	var problems []string
	for _, m := range msgs {
		if m.Deleted {
			continue
		}
		var parts []sdk.ChatMessagePart
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return fmt.Errorf("decode message %d: %w", m.ID, err)
		}
		for _, p := range parts {
			switch p.Type {
			case sdk.PartToolCall:
				if p.ProviderExecuted {
					provider[p.ToolCallID] = true
					continue
				}
				if calls[p.ToolCallID] != nil {
					problems = append(problems, fmt.Sprintf("tool call %s appears twice (message %d)", p.ToolCallID, m.ID))
					continue
				}
				calls[p.ToolCallID] = &call{msg: m.ID}
				order = append(order, p.ToolCallID)
			case sdk.PartToolResult:
				if provider[p.ToolCallID] {
					continue
				}
				c := calls[p.ToolCallID]
				if c == nil {
					problems = append(problems, fmt.Sprintf("result in message %d answers no earlier tool call (%s)", m.ID, p.ToolCallID))
					continue
				}
				c.results++
			}
		}
	}
	for _, id := range order {
		c := calls[id]
		switch {
		case c.results > 1:
			problems = append(problems, fmt.Sprintf("tool call %s (message %d) has %d results", id, c.msg, c.results))
		case c.results == 0 && settled:
			problems = append(problems, fmt.Sprintf("tool call %s (message %d) has no result though the turn is over", id, c.msg))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("every tool call has exactly one result: %s", strings.Join(problems, "; "))
	}
	return nil
}
