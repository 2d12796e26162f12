package openai

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	sdkopenai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// streamResponses streams one request over the Responses API. chatd keeps
// the conversation itself, so every request carries the whole prompt and
// nothing is stored at the provider (store: false).
func (p *Provider) streamResponses(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	params, err := buildResponsesParams(req)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: sdk.ChatErrorConfig, Provider: p.name, Message: err.Error(), Err: err}
	}
	stream := p.client.Responses.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		asm      llm.Assembler
		resp     llm.Response
		calls    = map[string]string{} // function_call item id -> call_id
		nCalls   int
		summary  = map[string]int64{} // reasoning item id -> summary index last streamed
		terminal *llm.Error           // response.failed or an error event
		done     bool
	)
	emit := func(part sdk.ChatMessagePart) {
		asm.Add(part)
		if onPart != nil {
			onPart(part)
		}
	}
	streamedArgs := map[string]bool{} // function_call item id -> arguments emitted
	// startCall announces a function call the first time its item is seen
	// and returns its call id.
	startCall := func(itemID, callID, name string) string {
		if id, ok := calls[itemID]; ok {
			return id
		}
		id := callID
		if id == "" {
			id = fmt.Sprintf("call_%d", nCalls)
		}
		nCalls++
		calls[itemID] = id
		emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ToolName: name})
		return id
	}
	for !done && stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_item.added", "response.output_item.done":
			if ev.Item.Type != "function_call" {
				continue
			}
			id := startCall(ev.Item.ID, ev.Item.CallID, ev.Item.Name)
			// A server that streamed no argument deltas has them here.
			if ev.Type == "response.output_item.done" && !streamedArgs[ev.Item.ID] && ev.Item.Arguments.OfString != "" {
				streamedArgs[ev.Item.ID] = true
				emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ArgsDelta: ev.Item.Arguments.OfString})
			}
		case "response.function_call_arguments.delta", "response.function_call_arguments.done":
			id, ok := calls[ev.ItemID]
			args := ev.Delta
			if ev.Type == "response.function_call_arguments.done" {
				if streamedArgs[ev.ItemID] {
					continue
				}
				args = ev.Arguments
			}
			if ok && args != "" {
				streamedArgs[ev.ItemID] = true
				emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ArgsDelta: args})
			}
		case "response.output_text.delta", "response.refusal.delta":
			if ev.Delta != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: ev.Delta})
			}
		case "response.reasoning_summary_text.delta":
			text := ev.Delta
			// Summary parts of one reasoning item are paragraphs.
			if last, seen := summary[ev.ItemID]; seen && ev.SummaryIndex != last {
				text = "\n\n" + text
			}
			summary[ev.ItemID] = ev.SummaryIndex
			if text != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: text})
			}
		case "response.reasoning_text.delta":
			// Raw reasoning, as open-weight models served over Responses
			// (gpt-oss on Ollama and vLLM) stream it.
			if ev.Delta != "" {
				emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: ev.Delta})
			}
		case "response.completed", "response.incomplete":
			resp.Usage = responsesUsage(ev.Response.Usage)
			resp.ID, resp.Model = ev.Response.ID, string(ev.Response.Model)
			resp.FinishReason = "stop"
			if ev.Type == "response.incomplete" {
				switch ev.Response.IncompleteDetails.Reason {
				case "content_filter":
					resp.FinishReason = "content_filter"
				default: // max_output_tokens
					resp.FinishReason = "length"
				}
			}
			done = true
		case "response.failed":
			e := ev.Response.Error
			terminal = responsesError(p.name, string(e.Code), e.Message)
			done = true
		case "error":
			terminal = responsesError(p.name, ev.Code, ev.Message)
			done = true
		}
	}
	resp.Parts = asm.Parts()
	if err := stream.Err(); err != nil {
		return resp, p.classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return resp, llm.Classify(p.name, fmt.Errorf("openai responses stream: %w", err))
	}
	if terminal != nil {
		return resp, terminal
	}
	switch resp.FinishReason {
	case "":
		return resp, &llm.Error{Kind: sdk.ChatErrorGeneric, Retryable: true, Provider: p.name,
			Message: "the stream ended before the model finished"}
	case "content_filter":
		return resp, &llm.Error{Kind: sdk.ChatErrorContentFilter, Provider: p.name,
			Message: "the response was stopped by the provider's content filter"}
	}
	if resp.FinishReason == "stop" && len(resp.ToolCalls()) > 0 {
		resp.FinishReason = "tool_calls"
	}
	return resp, nil
}

func responsesUsage(u responses.ResponseUsage) llm.Usage {
	return llm.Usage{
		InputTokens:     u.InputTokens,
		OutputTokens:    u.OutputTokens,
		ReasoningTokens: u.OutputTokensDetails.ReasoningTokens,
		CacheReadTokens: u.InputTokensDetails.CachedTokens,
	}
}

// responsesError classifies an error the Responses API reports inside a
// 200 stream (an error event, or response.failed) by the status its code
// stands for, as Chat Completions stream errors are.
func responsesError(provider, code, message string) *llm.Error {
	status := http.StatusInternalServerError
	c := strings.ToLower(code)
	switch {
	case strings.Contains(c, "rate_limit"), strings.Contains(c, "quota"):
		status = http.StatusTooManyRequests
	case strings.Contains(c, "overloaded"), strings.Contains(c, "unavailable"):
		status = http.StatusServiceUnavailable
	case strings.Contains(c, "invalid_api_key"), strings.Contains(c, "authentication"):
		status = http.StatusUnauthorized
	case strings.Contains(c, "timeout"):
		status = http.StatusGatewayTimeout
	case c == "", strings.Contains(c, "server_error"):
	default: // invalid_prompt, invalid_request_error, the image errors, ...
		status = http.StatusBadRequest
	}
	if message == "" {
		message = "the provider reported an error: " + code
	}
	le := llm.FromStatus(provider, status, message, nil)
	le.StatusCode = 0 // the HTTP answer was 200; the status was inferred
	return le
}

// buildResponsesParams maps a chatd request to Responses API parameters.
// Reasoning parts of earlier turns are not sent: without stored items or
// encrypted reasoning the API cannot take them back.
func buildResponsesParams(req llm.Request) (responses.ResponseNewParams, error) {
	params := responses.ResponseNewParams{
		Model: shared.ResponsesModel(req.Model),
		Store: sdkopenai.Bool(false),
	}
	var input responses.ResponseInputParam
	for _, m := range req.Messages {
		items, err := responsesInput(m)
		if err != nil {
			return params, err
		}
		input = append(input, items...)
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		schema, err := toolSchema(t.InputSchema)
		if err != nil {
			return params, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: sdkopenai.Bool(false)}
		if t.Description != "" {
			fn.Description = sdkopenai.String(t.Description)
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	if req.ReasoningEffort != "" {
		// Summaries are what the API shows of a reasoning model's thinking;
		// they are asked for only with an effort, as non-reasoning models
		// reject the reasoning object.
		params.Reasoning = shared.ReasoningParam{
			Effort:  shared.ReasoningEffort(req.ReasoningEffort),
			Summary: shared.ReasoningSummaryAuto,
		}
	}
	if req.MaxOutputTokens > 0 {
		params.MaxOutputTokens = sdkopenai.Int(int64(req.MaxOutputTokens))
	}
	return params, nil
}

// responsesInput maps one prompt message to input items: messages, the
// assistant's function calls and the function call outputs of tool
// results.
func responsesInput(m llm.Message) (responses.ResponseInputParam, error) {
	text := joinText(m.Parts)
	switch m.Role {
	case llm.RoleSystem:
		return responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleSystem)}, nil
	case llm.RoleUser:
		out := functionOutputs(m.Parts)
		if llm.HasFiles(m.Parts) {
			// input_text, input_image and input_file items in their order,
			// as data URLs (the Responses API takes images and PDFs).
			var content responses.ResponseInputMessageContentListParam
			for _, p := range m.Parts {
				switch {
				case p.Type == sdk.PartText && p.Text != "":
					content = append(content, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: p.Text}})
				case llm.IsImagePart(p):
					content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
						ImageURL: sdkopenai.String(p.URL), Detail: responses.ResponseInputImageDetailAuto,
					}})
				case llm.IsPDFPart(p):
					content = append(content, responsesPDF(p))
				}
			}
			return append(out, responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)), nil
		}
		if text != "" || len(out) == 0 {
			out = append(out, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
		}
		return out, nil
	case llm.RoleAssistant:
		var out responses.ResponseInputParam
		if text != "" {
			out = append(out, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
		}
		for _, p := range m.Parts {
			if p.Type != sdk.PartToolCall {
				continue
			}
			args := string(p.Args)
			if args == "" {
				args = "{}"
			}
			out = append(out, responses.ResponseInputItemParamOfFunctionCall(args, p.ToolCallID, p.ToolName))
		}
		return out, nil
	case llm.RoleTool:
		return functionOutputs(m.Parts), nil
	}
	return nil, fmt.Errorf("message role %q is not supported", m.Role)
}
