package worker

import (
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools/agents"
)

// DefaultMaxAgentDepth: root chats may spawn children, children may not.
const DefaultMaxAgentDepth = 1

// modelLister is the optional part of Models that lists the models
// (app.ModelList has it).
type modelLister interface {
	List() []sdk.ChatModel
}

// subagents are the agent tools (app/tools/agents: spawn_agent, ...) over
// the worker's collaborators and settings as they are now; the worker
// offers and runs them.
func (w *Worker) subagents() *agents.Service {
	return agents.New(agents.Deps{
		Store: w.deps.Store, Machine: w.deps.Machine, Pubsub: w.deps.Pubsub, Clock: w.clock, Hooks: w.deps.Hooks,
		CheckModel: func(id uuid.NullUUID) error {
			_, err := w.deps.Models.Resolve(id)
			return err
		},
		Models: func() []sdk.ChatModel {
			if l, ok := w.deps.Models.(modelLister); ok {
				return l.List()
			}
			return nil
		},
		GenerateTitle: w.GenerateTitle,
	}, agents.Config{Enabled: w.cfg.Subagents, MaxDepth: w.cfg.MaxAgentDepth, SyncInterval: w.cfg.SyncInterval})
}
