package openai

import (
	"encoding/json"

	sdkopenai "github.com/openai/openai-go/v3"
)

// chatChunk is what streamChat reads of a Chat Completions stream chunk.
// encoding/json decodes it in about a quarter of the time, with a tenth of
// the allocations, of the SDK's ChatCompletionChunk, whose decoder keeps
// every field's raw JSON: at hundreds of streaming chats that decoding was
// the largest part of a token's way in (docs/performance.md, "Capacity").
// A chunk it cannot decode (a compatible server sending a field with
// another type) goes through the SDK's lenient decoder instead, so nothing
// the SDK accepted is refused.
type chatChunk struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chunkUsage   `json:"usage"`
}

type chunkChoice struct {
	Index        int64      `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// The thinking text OpenAI-compatible servers put beside content:
	// reasoning_content (vLLM, DeepSeek, llama.cpp) or reasoning (Ollama,
	// OpenRouter).
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// reasoning is the delta's thinking text, reasoning_content first.
func (d chunkDelta) reasoning() string {
	if d.ReasoningContent != "" {
		return d.ReasoningContent
	}
	return d.Reasoning
}

// UnmarshalJSON decodes a chunk with encoding/json, or with the SDK's
// decoder when that fails.
func (c *chatChunk) UnmarshalJSON(data []byte) error {
	type plain chatChunk // without this method
	var p plain
	if err := json.Unmarshal(data, &p); err == nil {
		*c = chatChunk(p)
		return nil
	}
	var sdk sdkopenai.ChatCompletionChunk
	if err := json.Unmarshal(data, &sdk); err != nil {
		return err
	}
	*c = chunkFromSDK(sdk)
	return nil
}

// chunkFromSDK copies what streamChat reads from the SDK's chunk.
func chunkFromSDK(s sdkopenai.ChatCompletionChunk) chatChunk {
	c := chatChunk{ID: s.ID, Model: s.Model}
	if s.JSON.Usage.Valid() {
		u := &chunkUsage{PromptTokens: s.Usage.PromptTokens, CompletionTokens: s.Usage.CompletionTokens}
		u.PromptTokensDetails.CachedTokens = s.Usage.PromptTokensDetails.CachedTokens
		u.PromptTokensDetails.CacheWriteTokens = s.Usage.PromptTokensDetails.CacheWriteTokens
		u.CompletionTokensDetails.ReasoningTokens = s.Usage.CompletionTokensDetails.ReasoningTokens
		c.Usage = u
	}
	for _, ch := range s.Choices {
		d := chunkDelta{Content: ch.Delta.Content, Refusal: ch.Delta.Refusal, ReasoningContent: sdkReasoning(ch.Delta)}
		for _, tc := range ch.Delta.ToolCalls {
			call := chunkToolCall{Index: tc.Index, ID: tc.ID}
			call.Function.Name, call.Function.Arguments = tc.Function.Name, tc.Function.Arguments
			d.ToolCalls = append(d.ToolCalls, call)
		}
		c.Choices = append(c.Choices, chunkChoice{Index: ch.Index, Delta: d, FinishReason: ch.FinishReason})
	}
	return c
}

// sdkReasoning returns the SDK delta's thinking text, which it keeps only
// as raw extra fields (it has no type for them).
func sdkReasoning(d sdkopenai.ChatCompletionChunkChoiceDelta) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[key]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}
