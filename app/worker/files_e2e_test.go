package worker_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 16)...)

func (e *fixture) uploadFile(name, contentType string, body []byte) uuid.UUID {
	e.t.Helper()
	f, err := e.c.UploadFile(e.ctx, name, contentType, bytes.NewReader(body))
	require.NoError(e.t, err)
	got, typ, err := e.c.File(e.ctx, f.ID)
	require.NoError(e.t, err)
	require.Equal(e.t, body, got)
	require.NotEmpty(e.t, typ)
	return f.ID
}

// TestFilesReachTheModel: an image and a text file attached to a message
// reach a vision model on the real wire: OpenAI Chat Completions as an
// image_url data URL, Anthropic as a base64 image block, the text file as
// text with a header naming it.
func TestFilesReachTheModel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		models := map[string]string{"openai": "openai/gpt-4-turbo", "anthropic": "anthropic/claude-3-opus"}
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				e := setup(t, newStore(t), prov, []llmtest.Reply{llmtest.TextChunks("a cat")}, func(c *config.Config) {
					c.DefaultModel = models[prov.name]
				})
				img := e.uploadFile("cat.png", "image/png", pngBytes)
				md := e.uploadFile("notes.md", "text/markdown", []byte("# Notes\nfeed the cat"))
				chat := e.create(sdk.CreateChatRequest{Content: []sdk.ChatMessagePart{
					{Type: sdk.PartText, Text: "What is this?"},
					{Type: sdk.PartFile, FileID: &img},
					{Type: sdk.PartFile, FileID: &md},
				}})
				done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
				require.Nil(t, done.LastError)

				reqs := e.llm.Requests()
				require.Len(t, reqs, 1)
				msgs := asList(reqs[0].JSON(t)["messages"])
				user := asList(asMap(msgs[len(msgs)-1])["content"])
				require.Len(t, user, 3)
				b64 := base64.StdEncoding.EncodeToString(pngBytes)
				switch prov.name {
				case "openai":
					require.Equal(t, "image_url", asMap(user[1])["type"])
					require.Equal(t, "data:image/png;base64,"+b64, asMap(asMap(user[1])["image_url"])["url"])
				case "anthropic":
					require.Equal(t, "image", asMap(user[1])["type"])
					src := asMap(asMap(user[1])["source"])
					require.Equal(t, "base64", src["type"])
					require.Equal(t, "image/png", src["media_type"])
					require.Equal(t, b64, src["data"])
				}
				txt, _ := asMap(user[2])["text"].(string)
				require.True(t, strings.HasPrefix(txt, "[file: notes.md (text/markdown, 20 bytes)]\n# Notes\nfeed the cat"), txt)
			})
		}
	})
}
