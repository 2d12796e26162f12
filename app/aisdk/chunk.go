package aisdk

import "encoding/json"

// Chunk is one chunk of the AI SDK's UI message stream (the `ai` package's
// uiMessageChunkSchema): its type and the fields that type uses.
type Chunk struct {
	Type string `json:"type"`
	// ID names a text or reasoning part (text-*, reasoning-*) or a data part.
	ID    string `json:"id,omitempty"`
	Delta string `json:"delta,omitempty"`
	// MessageID and MessageMetadata are the start chunk's; finish carries
	// metadata too.
	MessageID       string `json:"messageId,omitempty"`
	MessageMetadata any    `json:"messageMetadata,omitempty"`
	// Tool chunks (tool-input-*, tool-output-*, tool-approval-request).
	ToolCallID       string          `json:"toolCallId,omitempty"`
	ToolName         string          `json:"toolName,omitempty"`
	InputTextDelta   string          `json:"inputTextDelta,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	Dynamic          bool            `json:"dynamic,omitempty"`
	ProviderExecuted bool            `json:"providerExecuted,omitempty"`
	ApprovalID       string          `json:"approvalId,omitempty"`
	// ErrorText is error's and tool-output-error's.
	ErrorText    string `json:"errorText,omitempty"`
	FinishReason string `json:"finishReason,omitempty"`
	// Reason is abort's.
	Reason string `json:"reason,omitempty"`
	// Sources and files.
	SourceID  string `json:"sourceId,omitempty"`
	URL       string `json:"url,omitempty"`
	Title     string `json:"title,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	// Data parts (data-chatd-*).
	Data      any  `json:"data,omitempty"`
	Transient bool `json:"transient,omitempty"`
}

// Chunk types chatd sends.
const (
	ChunkStart               = "start"
	ChunkFinish              = "finish"
	ChunkAbort               = "abort"
	ChunkError               = "error"
	ChunkStartStep           = "start-step"
	ChunkFinishStep          = "finish-step"
	ChunkResetStep           = "reset-step"
	ChunkTextStart           = "text-start"
	ChunkTextDelta           = "text-delta"
	ChunkTextEnd             = "text-end"
	ChunkReasoningStart      = "reasoning-start"
	ChunkReasoningDelta      = "reasoning-delta"
	ChunkReasoningEnd        = "reasoning-end"
	ChunkToolInputStart      = "tool-input-start"
	ChunkToolInputDelta      = "tool-input-delta"
	ChunkToolInputAvailable  = "tool-input-available"
	ChunkToolOutputAvailable = "tool-output-available"
	ChunkToolOutputError     = "tool-output-error"
	ChunkToolOutputDenied    = "tool-output-denied"
	ChunkToolApproval        = "tool-approval-request"
	ChunkSourceURL           = "source-url"
	ChunkFile                = "file"
	// Transient data parts: chatd's own state, for onData only.
	ChunkDataStatus = "data-chatd-status"
	ChunkDataQueue  = "data-chatd-queue"
	ChunkDataRetry  = "data-chatd-retry"
)

// Finish reasons chatd sends (the SDK's FinishReason).
const (
	FinishStop        = "stop"
	FinishToolCalls   = "tool-calls"
	FinishError       = "error"
	FinishInterrupted = "interrupted"
)
