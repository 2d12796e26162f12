package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func TestTitles(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		t.Run("fallback at once, generated in the background", func(t *testing.T) {
			t.Parallel()
			e := setup(t, newStore(t), providers[0], nil)
			e.titles.Enqueue(llmtest.TextChunks(`"Capital of`, ` France"`))
			prompt := "What is the capital of France?\nAnswer in one word."
			chat, err := e.c.CreateChat(e.ctx, sdk.CreateChatRequest{Content: sdk.Text(prompt)})
			require.NoError(t, err)
			require.Equal(t, chatstate.FallbackTitle(prompt, api.DefaultFallbackLength), chat.Title)
			require.Equal(t, "What is the capital of France?", chat.Title)
			require.Equal(t, string(store.TitleSourceFallback), chat.TitleSource)

			require.Eventually(t, func() bool { return e.peek(chat.ID).TitleSource == string(store.TitleSourceGenerated) },
				15*time.Second, 5*time.Millisecond, "a generated title replaces the fallback")
			require.Equal(t, "Capital of France", e.chat(chat.ID).Title, "the answer is cleaned into a title")

			reqs := e.titles.Requests()
			require.Len(t, reqs, 1)
			r := decodeRequest(t, reqs[0])
			require.Equal(t, "test-model", r.Model)
			require.Equal(t, []string{"system: " + llm.TitleInstruction, "user: " + prompt}, r.transcript())
		})

		t.Run("a user title set meanwhile is never overridden", func(t *testing.T) {
			t.Parallel()
			e := setup(t, newStore(t), providers[0], nil, func(cfg *config.Config) { cfg.Worker.TitleConcurrency = 1 })
			e.titles.Enqueue(llmtest.TextChunks("Generated one"), llmtest.TextChunks("Generated two"))
			held := e.router.HoldTitle()
			first, err := e.c.CreateChat(e.ctx, sdk.CreateChatRequest{Content: sdk.Text("first chat")})
			require.NoError(t, err)
			waitClosed(t, held.Arrived(), "the title request")
			mine := "My own title"
			require.NoError(t, e.c.UpdateChat(e.ctx, first.ID, sdk.UpdateChatRequest{Title: &mine}))
			held.Release()

			// One title loop: once the next chat has its generated title,
			// the first chat's generation has finished.
			second, err := e.c.CreateChat(e.ctx, sdk.CreateChatRequest{Content: sdk.Text("second chat")})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return e.peek(second.ID).Title == "Generated two" },
				15*time.Second, 5*time.Millisecond)
			got := e.chat(first.ID)
			require.Equal(t, mine, got.Title)
			require.Equal(t, string(store.TitleSourceUser), got.TitleSource)
			require.Len(t, e.titles.Requests(), 2)
		})
	})
}
