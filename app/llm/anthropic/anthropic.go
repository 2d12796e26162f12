// Package anthropic is chatd's provider for the Anthropic Messages API over
// the official anthropic-sdk-go, with streaming, tool use and thinking.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	sdkanthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/shared"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// Defaults of Config.
const (
	DefaultName      = "anthropic"
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192
)

// Config configures a Provider. Zero values take the Default constants.
type Config struct {
	// Name is the provider's name in model ids and errors ("anthropic").
	Name string
	// APIKey is sent as x-api-key.
	APIKey string
	// BaseURL is the API root, without /v1.
	BaseURL string
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens caps each answer when the request sets no MaxOutputTokens
	// (the API requires a cap).
	MaxTokens int64
	// MaxRetries is the SDK's own retry count; 0 because chatd's worker
	// retries with backoff and shows the retry to clients.
	MaxRetries int
}

// Provider streams Anthropic Messages.
type Provider struct {
	name      string
	maxTokens int64
	client    sdkanthropic.Client
	cfg       Config // for ListModels
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	// Every setting is explicit: ANTHROPIC_* variables and profile files of
	// the process do not change what was configured.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.APIKey != "" {
		// The SDK sends the key as a bearer token; x-api-key, the header the
		// API documents, is what Anthropic-compatible gateways check.
		opts = append(opts, option.WithAPIKey(cfg.APIKey), option.WithHeader("x-api-key", cfg.APIKey))
	}
	client := sdkanthropic.NewClient(opts...)
	return &Provider{name: cfg.Name, maxTokens: cfg.MaxTokens, client: client, cfg: cfg}
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Stream implements llm.Provider. On error the Response holds what was
// streamed before it.
func (p *Provider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	params, err := p.buildParams(req)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: sdk.ChatErrorConfig, Provider: p.name, Message: err.Error(), Err: err}
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		asm     llm.Assembler
		resp    llm.Response
		toolIDs = map[int64]string{} // content block index -> tool_use id
		stopped bool
		stop    string
	)
	emit := func(part sdk.ChatMessagePart) {
		asm.Add(part)
		if onPart != nil {
			onPart(part)
		}
	}
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			resp.ID, resp.Model = ev.Message.ID, string(ev.Message.Model)
			u := ev.Message.Usage
			resp.Usage = llm.Usage{
				InputTokens:         u.InputTokens,
				OutputTokens:        u.OutputTokens,
				CacheCreationTokens: u.CacheCreationInputTokens,
				CacheReadTokens:     u.CacheReadInputTokens,
			}
		case "content_block_start":
			b := ev.ContentBlock
			switch b.Type {
			case "text":
				if b.Text != "" {
					emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: b.Text})
				}
			case "thinking":
				if b.Thinking != "" {
					emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: b.Thinking})
				}
			case "tool_use":
				toolIDs[ev.Index] = b.ID
				emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: b.ID, ToolName: b.Name})
			}
		case "content_block_delta":
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: d.Text})
			case "thinking_delta":
				emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: d.Thinking})
			case "input_json_delta":
				if id, ok := toolIDs[ev.Index]; ok && d.PartialJSON != "" {
					emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ArgsDelta: d.PartialJSON})
				}
			}
		case "message_delta":
			stop = string(ev.Delta.StopReason)
			u := ev.Usage
			resp.Usage.OutputTokens = u.OutputTokens
			resp.Usage.ReasoningTokens = u.OutputTokensDetails.ThinkingTokens
			// Newer API versions repeat the input counts here.
			if u.InputTokens > 0 {
				resp.Usage.InputTokens = u.InputTokens
			}
			if u.CacheCreationInputTokens > 0 {
				resp.Usage.CacheCreationTokens = u.CacheCreationInputTokens
			}
			if u.CacheReadInputTokens > 0 {
				resp.Usage.CacheReadTokens = u.CacheReadInputTokens
			}
		case "message_stop":
			stopped = true
		}
	}
	resp.Parts = asm.Parts()
	resp.FinishReason = finishReason(stop)
	if err := stream.Err(); err != nil {
		return resp, p.classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return resp, llm.Classify(p.name, fmt.Errorf("anthropic stream: %w", err))
	}
	switch {
	case !stopped:
		return resp, &llm.Error{Kind: sdk.ChatErrorGeneric, Retryable: true, Provider: p.name,
			Message: "the stream ended before the model finished"}
	case stop == string(sdkanthropic.StopReasonRefusal):
		return resp, &llm.Error{Kind: sdk.ChatErrorContentFilter, Provider: p.name,
			Message: "the model declined to answer (refusal)"}
	}
	return resp, nil
}

// finishReason maps stop_reason to chatd's finish reasons; unknown ones
// pass through.
func finishReason(stop string) string {
	switch sdkanthropic.StopReason(stop) {
	case sdkanthropic.StopReasonEndTurn, sdkanthropic.StopReasonStopSequence:
		return "stop"
	case sdkanthropic.StopReasonToolUse:
		return "tool_calls"
	case sdkanthropic.StopReasonMaxTokens, sdkanthropic.StopReasonModelContextWindowExceeded:
		return "length"
	case sdkanthropic.StopReasonRefusal:
		return "content_filter"
	}
	return stop
}

func (p *Provider) classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return llm.Classify(p.name, fmt.Errorf("anthropic stream: %w", ctxErr))
	}
	var apiErr *sdkanthropic.Error
	if errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		if status < 400 {
			// An error event inside a 200 stream: its type says what it is.
			status = typeStatus(apiErr.Type())
		}
		e := llm.FromStatus(p.name, status, apiErr.Message, err)
		e.StatusCode = apiErr.StatusCode
		if apiErr.StatusCode < 400 {
			e.StatusCode = 0
		}
		return e
	}
	return llm.Classify(p.name, err)
}

// typeStatus is the HTTP status the API uses for an error type.
func typeStatus(t shared.ErrorType) int {
	switch t {
	case shared.ErrorTypeInvalidRequestError:
		return http.StatusBadRequest
	case shared.ErrorTypeAuthenticationError:
		return http.StatusUnauthorized
	case shared.ErrorTypePermissionError, shared.ErrorTypeBillingError:
		return http.StatusForbidden
	case shared.ErrorTypeNotFoundError:
		return http.StatusNotFound
	case shared.ErrorTypeRateLimitError:
		return http.StatusTooManyRequests
	case shared.ErrorTypeTimeoutError:
		return http.StatusGatewayTimeout
	case shared.ErrorTypeOverloadedError:
		return 529
	}
	return http.StatusInternalServerError
}

// buildParams maps a chatd request to Messages parameters. System
// messages, wherever they are, join the system parameter.
func (p *Provider) buildParams(req llm.Request) (sdkanthropic.MessageNewParams, error) {
	params := sdkanthropic.MessageNewParams{Model: req.Model, MaxTokens: p.maxTokens}
	if req.MaxOutputTokens > 0 {
		params.MaxTokens = int64(req.MaxOutputTokens)
	}
	var msgs messageList
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			for _, part := range m.Parts {
				if part.Type == sdk.PartText && part.Text != "" {
					params.System = append(params.System, sdkanthropic.TextBlockParam{Text: part.Text})
				}
			}
		case llm.RoleUser, llm.RoleTool:
			msgs.add(true, userBlocks(m.Parts))
		case llm.RoleAssistant:
			msgs.add(false, assistantBlocks(m.Parts))
		default:
			return params, fmt.Errorf("message role %q is not supported", m.Role)
		}
	}
	params.Messages = msgs.list
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return params, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tool := sdkanthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = sdkanthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, sdkanthropic.ToolUnionParam{OfTool: &tool})
	}
	applyEffort(&params, req, continuesToolUse(req.Messages))
	return params, nil
}

// messageList merges consecutive messages of one role, as the API wants
// (tool results and a following user text share one user message).
type messageList struct {
	list     []sdkanthropic.MessageParam
	lastUser bool
}

func (l *messageList) add(user bool, blocks []sdkanthropic.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	if n := len(l.list); n > 0 && l.lastUser == user {
		if user {
			l.list[n-1].OfUser.Content = append(l.list[n-1].OfUser.Content, blocks...)
		} else {
			l.list[n-1].OfAssistant.Content = append(l.list[n-1].OfAssistant.Content, blocks...)
		}
		return
	}
	l.lastUser = user
	if user {
		l.list = append(l.list, sdkanthropic.NewUserMessage(blocks...))
	} else {
		l.list = append(l.list, sdkanthropic.NewAssistantMessage(blocks...))
	}
}

// userBlocks maps user text and tool results; tool results go first, as
// the API requires them to lead a user message.
func userBlocks(parts []sdk.ChatMessagePart) []sdkanthropic.ContentBlockParamUnion {
	var results, texts []sdkanthropic.ContentBlockParamUnion
	for _, part := range parts {
		switch part.Type {
		case sdk.PartText:
			if part.Text != "" {
				texts = append(texts, sdkanthropic.NewTextBlock(part.Text))
			}
		case sdk.PartFile:
			if mediaType, data, ok := llm.ImageData(part); ok {
				texts = append(texts, sdkanthropic.NewImageBlockBase64(mediaType, data))
			} else if _, data, ok := llm.FileData(part); ok && llm.IsPDFPart(part) {
				texts = append(texts, documentBlock(part.Name, data))
			}
		case sdk.PartToolResult:
			results = append(results, toolResultBlock(part))
		}
	}
	return append(results, texts...)
}

// documentBlock is a PDF as a document block with a base64 source, titled
// with the file's name.
func documentBlock(name, data string) sdkanthropic.ContentBlockParamUnion {
	block := sdkanthropic.NewDocumentBlock(sdkanthropic.Base64PDFSourceParam{Data: data})
	if name != "" {
		block.OfDocument.Title = sdkanthropic.String(name)
	}
	return block
}

// toolResultBlock is a tool result: its text, then the images it returned
// as image blocks inside the tool_result's content. Audio is not taken by
// the API; its block stays in the text as a description.
func toolResultBlock(part sdk.ChatMessagePart) sdkanthropic.ContentBlockParamUnion {
	result, media := llm.SplitToolResult(part.Result)
	r := sdkanthropic.ToolResultBlockParam{ToolUseID: part.ToolCallID}
	if text := resultText(result); text != "" {
		r.Content = []sdkanthropic.ToolResultBlockParamContentUnion{{OfText: &sdkanthropic.TextBlockParam{Text: text}}}
	}
	for _, m := range media {
		if !m.IsImage() {
			continue
		}
		img := sdkanthropic.NewImageBlockBase64(m.MediaType, m.Data)
		r.Content = append(r.Content, sdkanthropic.ToolResultBlockParamContentUnion{OfImage: img.OfImage})
	}
	if part.IsError {
		r.IsError = sdkanthropic.Bool(true)
	}
	return sdkanthropic.ContentBlockParamUnion{OfToolResult: &r}
}

// assistantBlocks maps assistant text and tool calls. Reasoning is left
// out: without its signature the API would reject it.
func assistantBlocks(parts []sdk.ChatMessagePart) []sdkanthropic.ContentBlockParamUnion {
	var out []sdkanthropic.ContentBlockParamUnion
	for _, part := range parts {
		switch part.Type {
		case sdk.PartText:
			if part.Text != "" {
				out = append(out, sdkanthropic.NewTextBlock(part.Text))
			}
		case sdk.PartToolCall:
			// input must be an object; arguments the model garbled (kept
			// as a JSON string by llm.Assembler) cannot be sent back.
			args := part.Args
			var obj map[string]any
			if json.Unmarshal(args, &obj) != nil || obj == nil {
				args = json.RawMessage(`{}`)
			}
			out = append(out, sdkanthropic.NewToolUseBlock(part.ToolCallID, args, part.ToolName))
		}
	}
	return out
}

// resultText is the text a model sees for a tool result: a JSON string
// unquoted, other JSON as is.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// inputSchema splits a tool's JSON Schema into the SDK's fields; an empty
// schema becomes {"type":"object","properties":{}}.
func inputSchema(raw json.RawMessage) (sdkanthropic.ToolInputSchemaParam, error) {
	var out sdkanthropic.ToolInputSchemaParam
	schema := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return out, fmt.Errorf("input schema: %w", err)
		}
	}
	out.Properties = map[string]any{}
	if props, ok := schema["properties"]; ok {
		out.Properties = props
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				out.Required = append(out.Required, s)
			}
		}
	}
	delete(schema, "type")
	delete(schema, "properties")
	delete(schema, "required")
	if len(schema) > 0 {
		out.ExtraFields = schema
	}
	return out, nil
}

// continuesToolUse reports whether the request answers tool calls: its
// last message holds tool results.
func continuesToolUse(msgs []llm.Message) bool {
	if len(msgs) == 0 {
		return false
	}
	for _, p := range msgs[len(msgs)-1].Parts {
		if p.Type == sdk.PartToolResult {
			return true
		}
	}
	return false
}

// thinkingBudgets are the budget_tokens of each effort on models with
// budget-based thinking.
var thinkingBudgets = map[string]int64{
	"minimal": 1024,
	"low":     2048,
	"medium":  8192,
	"high":    16384,
	"xhigh":   24576,
	"max":     32000,
}

// applyEffort turns on thinking for a reasoning effort. Models from Claude
// 4.6 on get adaptive thinking with output_config.effort; older ones
// budget_tokens thinking, with max_tokens raised above the budget. A
// request that continues a tool loop gets no thinking: the API wants the
// previous turn's signed thinking block back, and chatd does not keep
// signatures.
func applyEffort(params *sdkanthropic.MessageNewParams, req llm.Request, toolContinuation bool) {
	effort := req.ReasoningEffort
	budget, ok := thinkingBudgets[effort]
	if !ok || toolContinuation {
		return
	}
	if adaptiveThinking(req.Model) {
		params.Thinking = sdkanthropic.ThinkingConfigParamUnion{OfAdaptive: &sdkanthropic.ThinkingConfigAdaptiveParam{
			Display: sdkanthropic.ThinkingConfigAdaptiveDisplaySummarized,
		}}
		if effort == "minimal" {
			effort = "low"
		}
		params.OutputConfig.Effort = sdkanthropic.OutputConfigEffort(effort)
		return
	}
	params.Thinking = sdkanthropic.ThinkingConfigParamOfEnabled(budget)
	if params.MaxTokens <= budget {
		params.MaxTokens = budget + DefaultMaxTokens
	}
}

// adaptiveThinking reports whether model takes adaptive thinking: Claude
// 4.6 and later, and names without a version (assumed new).
func adaptiveThinking(model string) bool {
	var version []int
	for _, f := range strings.Split(model, "-") {
		n, err := strconv.Atoi(f)
		if err != nil || len(f) > 2 {
			continue // a name or a date
		}
		version = append(version, n)
	}
	switch {
	case len(version) == 0:
		return true
	case len(version) == 1:
		return version[0] > 4
	}
	return version[0] > 4 || (version[0] == 4 && version[1] >= 6)
}
