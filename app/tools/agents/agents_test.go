package agents_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/tools/agents"
	"github.com/chatd/chatd/store"
)

// TestTools pins the agent tools' names, effect classes (what the journal
// does with a call in doubt) and which are offered.
func TestTools(t *testing.T) {
	want := map[string]string{
		agents.ToolSpawnAgent: store.EffectIdempotent, agents.ToolMessageAgent: store.EffectIdempotent,
		agents.ToolInterruptAgent: store.EffectIdempotent, agents.ToolCloseAgent: store.EffectIdempotent,
		agents.ToolWaitAgent: store.EffectPure, agents.ToolListAgents: store.EffectPure,
		agents.ToolListSubagentModels: store.EffectPure,
	}
	got := map[string]string{}
	deprecated := map[string]bool{}
	for _, tl := range agents.New(agents.Deps{}, agents.Config{}).Tools() {
		got[tl.Name()] = tl.Effect()
		require.True(t, json.Valid(tl.Schema()), tl.Name())
		if !tools.Offered(tl) {
			deprecated[tl.Name()] = true
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, map[string]bool{agents.ToolCloseAgent: true}, deprecated, "close_agent runs but is not offered")
}

// TestOffered: off unless enabled; a root chat is offered the tools
// without a read (its children are at depth 1).
func TestOffered(t *testing.T) {
	ctx := context.Background()
	root := store.Chat{ID: uuid.New()}
	ok, err := agents.New(agents.Deps{}, agents.Config{}).Offered(ctx, root)
	require.NoError(t, err)
	require.False(t, ok, "off by default")
	ok, err = agents.New(agents.Deps{}, agents.Config{Enabled: true, MaxDepth: 1}).Offered(ctx, root)
	require.NoError(t, err)
	require.True(t, ok)
}

// TestSubagentID: a re-run of the same call finds the same child; another
// call or another parent gets another.
func TestSubagentID(t *testing.T) {
	p, q := uuid.New(), uuid.New()
	require.Equal(t, agents.SubagentID(p, "c1"), agents.SubagentID(p, "c1"))
	require.NotEqual(t, agents.SubagentID(p, "c1"), agents.SubagentID(p, "c2"))
	require.NotEqual(t, agents.SubagentID(p, "c1"), agents.SubagentID(q, "c1"))
}
