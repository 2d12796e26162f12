// Package openai is chatd's provider for the OpenAI APIs, Chat Completions
// and Responses, and the servers that speak them (Ollama, vLLM, llama.cpp,
// LM Studio), over the official openai-go SDK with streaming and function
// tools. UsesResponsesAPI picks the transport per model; ListModels
// discovers a server's models.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdkopenai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// Defaults of Config.
const (
	DefaultName    = "openai"
	DefaultBaseURL = "https://api.openai.com/v1"
)

// Config configures a Provider. Zero values take the Default constants.
type Config struct {
	// Name is the provider's name in model ids and errors ("openai"); set it
	// to e.g. "ollama" for a second OpenAI-compatible endpoint.
	Name string
	// APIKey is sent as a bearer token; local servers usually need none.
	APIKey string
	// BaseURL is the API root including /v1, e.g. http://localhost:11434/v1
	// for Ollama.
	BaseURL string
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is the SDK's own retry count; 0 because chatd's worker
	// retries with backoff and shows the retry to clients.
	MaxRetries int
	// UseResponsesAPI chooses the transport: nil follows UsesResponsesAPI's
	// known-model rule, true forces the Responses API, false forces Chat
	// Completions (what OpenAI-compatible servers need).
	UseResponsesAPI *bool
}

// Provider streams Chat Completions or Responses, per UsesResponsesAPI.
type Provider struct {
	name         string
	client       sdkopenai.Client
	useResponses *bool
	cfg          Config // for ListModels
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	cfg = withDefaults(cfg)
	// Every setting is explicit, so OPENAI_* variables of the process do not
	// change what was configured.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithAPIKey(cfg.APIKey),
	}
	return &Provider{name: cfg.Name, client: sdkopenai.NewClient(opts...), useResponses: cfg.UseResponsesAPI, cfg: cfg}
}

// withDefaults fills cfg's zero values from the Default constants.
func withDefaults(cfg Config) Config {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return cfg
}

// WithResponsesAPI returns a Provider sharing p's client and name whose
// transport follows override as Config.UseResponsesAPI does: one per model
// config whose options set use_responses_api, over one provider's client.
func (p *Provider) WithResponsesAPI(override *bool) *Provider {
	c := *p
	c.useResponses = override
	return &c
}

// UsesResponsesAPI reports whether p sends requests for model over the
// Responses API (which, unlike Chat Completions, accepts only images and
// PDFs as files).
func (p *Provider) UsesResponsesAPI(model string) bool {
	return UsesResponsesAPI(model, p.useResponses)
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Stream implements llm.Provider. On error the Response holds what was
// streamed before it.
func (p *Provider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	if p.UsesResponsesAPI(req.Model) {
		return p.streamResponses(ctx, req, onPart)
	}
	return p.streamChat(ctx, req, onPart)
}

// streamChat streams one request over Chat Completions.
func (p *Provider) streamChat(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	params, err := buildParams(req, takesAudio(p.name, req.Model))
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: sdk.ChatErrorConfig, Provider: p.name, Message: err.Error(), Err: err}
	}
	// The SDK makes the request (auth, "stream": true, errors) and hands
	// over the response; the stream decodes its events as chatChunk.
	var res *http.Response
	sent := p.client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseBodyInto(&res))
	stream := ssestream.NewStream[chatChunk](ssestream.NewDecoder(res), sent.Err())
	defer stream.Close()

	var (
		asm    llm.Assembler
		resp   llm.Response
		calls  = map[int64]string{} // choice tool_calls index -> id
		nCalls int
	)
	emit := func(part sdk.ChatMessagePart) {
		asm.Add(part)
		if onPart != nil {
			onPart(part)
		}
	}
	for stream.Next() {
		chunk := stream.Current()
		if resp.ID == "" {
			resp.ID, resp.Model = chunk.ID, chunk.Model
		}
		if u := chunk.Usage; u != nil {
			resp.Usage = llm.Usage{
				InputTokens:         u.PromptTokens,
				OutputTokens:        u.CompletionTokens,
				ReasoningTokens:     u.CompletionTokensDetails.ReasoningTokens,
				CacheReadTokens:     u.PromptTokensDetails.CachedTokens,
				CacheCreationTokens: u.PromptTokensDetails.CacheWriteTokens,
			}
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			d := choice.Delta
			if r := d.reasoning(); r != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: r})
			}
			if d.Content != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: d.Content})
			}
			if d.Refusal != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: d.Refusal})
			}
			for _, tc := range d.ToolCalls {
				id, known := calls[tc.Index]
				// A new id at a known index is a new call: some compatible
				// servers send every call at index 0.
				if !known || (tc.ID != "" && tc.ID != id) {
					id = tc.ID
					if id == "" {
						id = fmt.Sprintf("call_%d", nCalls)
					}
					nCalls++
					calls[tc.Index] = id
					emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ToolName: tc.Function.Name})
				}
				if tc.Function.Arguments != "" {
					emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ArgsDelta: tc.Function.Arguments})
				}
			}
			if choice.FinishReason != "" {
				resp.FinishReason = choice.FinishReason
			}
		}
	}
	resp.Parts = asm.Parts()
	if err := stream.Err(); err != nil {
		return resp, p.classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return resp, llm.Classify(p.name, fmt.Errorf("openai stream: %w", err))
	}
	switch resp.FinishReason {
	case "":
		return resp, &llm.Error{Kind: sdk.ChatErrorGeneric, Retryable: true, Provider: p.name,
			Message: "the stream ended before the model finished"}
	case "content_filter":
		return resp, &llm.Error{Kind: sdk.ChatErrorContentFilter, Provider: p.name,
			Message: "the response was stopped by the provider's content filter"}
	case "function_call":
		resp.FinishReason = "tool_calls"
	}
	// Some compatible servers finish tool calls with "stop".
	if resp.FinishReason == "stop" && len(resp.ToolCalls()) > 0 {
		resp.FinishReason = "tool_calls"
	}
	return resp, nil
}

func (p *Provider) classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return llm.Classify(p.name, fmt.Errorf("openai stream: %w", ctxErr))
	}
	var apiErr *sdkopenai.Error
	if errors.As(err, &apiErr) {
		return llm.FromStatus(p.name, apiErr.StatusCode, apiErr.Message, err)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return streamError(p.name, streamErr)
	}
	return llm.Classify(p.name, err)
}

// streamError classifies an error object sent inside a 200 stream: the
// status it stands for comes from its code or type.
func streamError(provider string, se *ssestream.StreamError) *llm.Error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &body)
	msg := body.Error.Message
	if msg == "" {
		msg = se.Message
	}
	status := http.StatusInternalServerError
	code := strings.ToLower(fmt.Sprint(body.Error.Code) + " " + body.Error.Type)
	switch {
	case strings.Contains(code, "rate_limit"):
		status = http.StatusTooManyRequests
	case strings.Contains(code, "overloaded"), strings.Contains(code, "unavailable"):
		status = http.StatusServiceUnavailable
	case strings.Contains(code, "invalid_api_key"), strings.Contains(code, "authentication"):
		status = http.StatusUnauthorized
	case strings.Contains(code, "invalid_request"):
		status = http.StatusBadRequest
	}
	le := llm.FromStatus(provider, status, msg, se)
	le.StatusCode = 0 // the HTTP answer was 200; the status was inferred
	return le
}

// buildParams maps a chatd request to Chat Completions parameters; audio:
// the model takes input_audio (media.go).
func buildParams(req llm.Request, audio bool) (sdkopenai.ChatCompletionNewParams, error) {
	params := sdkopenai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: sdkopenai.ChatCompletionStreamOptionsParam{IncludeUsage: sdkopenai.Bool(true)},
	}
	for _, m := range req.Messages {
		msgs, err := messages(m, audio)
		if err != nil {
			return params, err
		}
		params.Messages = append(params.Messages, msgs...)
	}
	params.Messages = mediaAfterToolRun(params.Messages)
	for _, t := range req.Tools {
		schema, err := toolSchema(t.InputSchema)
		if err != nil {
			return params, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = sdkopenai.String(t.Description)
		}
		params.Tools = append(params.Tools, sdkopenai.ChatCompletionFunctionTool(fn))
	}
	if req.ReasoningEffort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	if req.MaxOutputTokens > 0 {
		params.MaxCompletionTokens = sdkopenai.Int(int64(req.MaxOutputTokens))
	}
	return params, nil
}

// messages maps one prompt message; a tool message becomes one tool message
// per result (and a user message with the media they returned).
func messages(m llm.Message, audio bool) ([]sdkopenai.ChatCompletionMessageParamUnion, error) {
	text := joinText(m.Parts)
	switch m.Role {
	case llm.RoleSystem:
		return []sdkopenai.ChatCompletionMessageParamUnion{sdkopenai.SystemMessage(text)}, nil
	case llm.RoleUser:
		out := toolResults(m.Parts, audio)
		if llm.HasFiles(m.Parts) {
			// Text, images and PDFs in their order, as data URLs.
			var content []sdkopenai.ChatCompletionContentPartUnionParam
			for _, p := range m.Parts {
				switch {
				case p.Type == sdk.PartText && p.Text != "":
					content = append(content, sdkopenai.TextContentPart(p.Text))
				case llm.IsImagePart(p):
					content = append(content, sdkopenai.ImageContentPart(sdkopenai.ChatCompletionContentPartImageImageURLParam{URL: p.URL}))
				case llm.IsPDFPart(p):
					content = append(content, pdfPart(p))
				}
			}
			return append(out, sdkopenai.UserMessage(content)), nil
		}
		if text != "" || len(out) == 0 {
			out = append(out, sdkopenai.UserMessage(text))
		}
		return out, nil
	case llm.RoleAssistant:
		var a sdkopenai.ChatCompletionAssistantMessageParam
		if text != "" {
			a.Content.OfString = sdkopenai.String(text)
		}
		for _, p := range m.Parts {
			if p.Type != sdk.PartToolCall {
				continue
			}
			args := string(p.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdkopenai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdkopenai.ChatCompletionMessageFunctionToolCallParam{
					ID:       p.ToolCallID,
					Function: sdkopenai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.ToolName, Arguments: args},
				},
			})
		}
		if text == "" && len(a.ToolCalls) == 0 {
			return nil, nil // nothing the API would accept, e.g. reasoning only
		}
		return []sdkopenai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
	case llm.RoleTool:
		return toolResults(m.Parts, audio), nil
	}
	return nil, fmt.Errorf("message role %q is not supported", m.Role)
}

// resultText is the text a model sees for a tool result: a JSON string
// result unquoted, other JSON as is, prefixed with "error: " when the
// tool failed.
func resultText(p sdk.ChatMessagePart) string {
	text := string(p.Result)
	var s string
	if json.Unmarshal(p.Result, &s) == nil {
		text = s
	}
	if p.IsError {
		text = "error: " + text
	}
	return text
}

func joinText(parts []sdk.ChatMessagePart) string {
	var texts []string
	for _, p := range parts {
		if p.Type == sdk.PartText && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// toolSchema decodes a tool's JSON Schema; an empty one, or an object
// schema without properties, gets "properties": {} which strict servers
// require.
func toolSchema(raw json.RawMessage) (shared.FunctionParameters, error) {
	schema := shared.FunctionParameters{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
	}
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	if _, ok := schema["properties"]; !ok && schema["type"] == "object" {
		schema["properties"] = map[string]any{}
	}
	return schema, nil
}
