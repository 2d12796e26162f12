package openai

import (
	"encoding/json"
	"testing"

	sdkopenai "github.com/openai/openai-go/v3"
)

// BenchmarkChunkDecode decodes one text chunk as streamChat reads it and,
// as the baseline, as the SDK's ChatCompletionChunk.
func BenchmarkChunkDecode(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test",` +
		`"choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`)
	b.Run("chatd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chatChunk
			if err := json.Unmarshal(data, &c); err != nil || c.Choices[0].Delta.Content != " token" {
				b.Fatal(err, c)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c sdkopenai.ChatCompletionChunk
			if err := json.Unmarshal(data, &c); err != nil || c.Choices[0].Delta.Content != " token" {
				b.Fatal(err, c)
			}
		}
	})
}
