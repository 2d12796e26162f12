package app

import (
	"context"

	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/mcp"
)

// mcpElicitor puts the MCP servers' questions to the chats through the
// elicitation service.
type mcpElicitor struct{ s *elicit.Service }

func (e mcpElicitor) Elicit(ctx context.Context, q mcp.Elicitation) (mcp.ElicitationAnswer, error) {
	a, err := e.s.Ask(ctx, elicit.Question{
		ChatID: q.ChatID, ToolCallID: q.ToolCallID, Server: q.Server, Mode: q.Mode, Message: q.Message,
		Schema: q.Schema, URL: q.URL,
	})
	return mcp.ElicitationAnswer{Action: a.Action, Content: a.Content}, err
}

// startElicit runs the sweep that cancels questions whose holder is gone
// (a restart), until stopElicit.
func (a *App) startElicit(ctx context.Context) {
	if a.elicit == nil || a.elicitStop != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.elicit.Run(ctx)
	}()
	a.elicitStop = func() { cancel(); <-done }
}

func (a *App) stopElicit() {
	if a.elicitStop != nil {
		a.elicitStop()
		a.elicitStop = nil
	}
}
