package pubsub_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/pubsub"
)

func TestMemoryFanOutAndCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := pubsub.NewMemory()
	a, b := make(chan string, 4), make(chan string, 4)
	cancelA, err := ps.Subscribe(ctx, "c", func(p []byte) { a <- string(p) })
	require.NoError(t, err)
	_, err = ps.Subscribe(ctx, "c", func(p []byte) { b <- string(p) })
	require.NoError(t, err)
	other := make(chan string, 1)
	_, err = ps.Subscribe(ctx, "other", func(p []byte) { other <- string(p) })
	require.NoError(t, err)

	require.NoError(t, ps.Publish(ctx, "c", []byte("one")))
	require.Equal(t, "one", <-a)
	require.Equal(t, "one", <-b)

	cancelA()
	cancelA() // idempotent
	require.NoError(t, ps.Publish(ctx, "c", []byte("two")))
	require.Equal(t, "two", <-b)
	require.Empty(t, a, "a cancelled subscriber receives nothing")
	require.Empty(t, other, "channels are separate")
	require.Equal(t, "chat:update:x", pubsub.ChannelUpdate("x"))
}
