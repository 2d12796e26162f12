package worker

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestTitleIgnoresHookContext: the title model is asked about the prompt,
// not the lifecycle hook context that precedes it in history.
func TestTitleIgnoresHookContext(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{})
		var id uuid.UUID
		g.do(func(t *chatstate.Tx) error {
			res, err := t.Create(chatstate.CreateParams{
				OwnerID: g.owner, Title: "plan a trip", TitleSource: store.TitleSourceFallback,
				Input: chatstate.UserInput{
					Content: sdk.Text("plan a trip"), CreatedBy: uuid.NullUUID{UUID: g.owner, Valid: true},
					Context: []chatstate.HookContext{
						{Text: "policy: be brief", Visibility: store.VisibilityModel},
						{Text: "a notice for everyone", Visibility: store.VisibilityBoth},
					},
				},
			})
			id = res.Chat.ID
			return err
		})
		g.provider.answer("Trip planning")
		require.NoError(t, g.w.generateTitle(g.ctx, id))
		call := g.provider.next(t)
		last := call.req.Messages[len(call.req.Messages)-1]
		require.Equal(t, "plan a trip", last.Parts[0].Text)
		require.Equal(t, "Trip planning", g.chat(id).Title)
	})
}
