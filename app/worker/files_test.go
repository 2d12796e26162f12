package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// TestFilePartsForTheModel: an evicted user upload becomes a note that it
// expired, an evicted assistant file is dropped, an image to a model
// without vision becomes a note, a text file is text and an image a data
// URL.
func TestFilePartsForTheModel(t *testing.T) {
	t.Parallel()
	img, txt, gone := uuid.New(), uuid.New(), uuid.New()
	v := view{files: map[uuid.UUID]store.File{
		img: {ID: img, Name: "a.png", MediaType: "image/png", Content: []byte{1, 2, 3}},
		txt: {ID: txt, Name: "a.txt", MediaType: "text/plain", Content: []byte("hello")},
	}}
	parts := []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "look"},
		{Type: sdk.PartFile, FileID: &img, Name: "a.png"},
		{Type: sdk.PartFile, FileID: &txt, Name: "a.txt"},
		{Type: sdk.PartFile, FileID: &gone, Name: "old.png"},
	}
	got := v.fileParts(store.RoleUser, parts)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "look"},
		{Type: sdk.PartText, Text: "[image a.png: not shown, this model does not take images]"},
		{Type: sdk.PartText, Text: "[file: a.txt (text/plain, 5 bytes)]\nhello"},
		{Type: sdk.PartText, Text: "[attachment old.png: its content has expired]"},
	}, got)

	v.images = true
	got = v.fileParts(store.RoleUser, parts)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &img, Name: "a.png", MediaType: "image/png",
		URL: "data:image/png;base64,AQID"}, got[1])

	got = v.fileParts(store.RoleAssistant, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "x"}, {Type: sdk.PartFile, FileID: &gone}})
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "x"}}, got, "an evicted assistant file is dropped")
}

// remover is a FileRemover that reports each pass.
type remover struct{ passes chan struct{} }

func (r remover) RemoveUnreferenced(ctx context.Context) (int64, error) {
	select {
	case r.passes <- struct{}{}:
	case <-ctx.Done():
	}
	return 0, nil
}

// TestFileRetentionLoop: the loop runs a pass at once, then one every
// FileRetentionInterval of the clock, and stops with its context.
func TestFileRetentionLoop(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := remover{passes: make(chan struct{})}
	w := &Worker{cfg: Config{FileRetentionInterval: time.Hour}, deps: Deps{Files: r}, clock: fake, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.fileRetentionLoop(ctx) }()

	<-r.passes // the first pass runs at once
	require.NoError(t, fake.BlockUntil(ctx, 1))
	select {
	case <-r.passes:
		t.Fatal("a second pass ran before the interval")
	default:
	}
	fake.Advance(time.Hour)
	<-r.passes
	cancel()
	<-done
}
