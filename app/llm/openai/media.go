package openai

// PDFs in user messages and media in tool results, for both transports.
//
// Chat Completions takes a PDF as a "file" content part (file_data: the
// data: URL, filename). Its tool messages hold text only, so the images a
// tool returned (and its audio, for a model that takes input_audio) follow
// the tool messages as one user message, each tool call's media after a
// line naming the call. The Responses API takes a PDF as input_file and a
// tool's images inside the function_call_output itself; it takes no
// audio there, so audio stays a description in the output's text.

import (
	"fmt"

	sdkopenai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/sdk"
)

// takesAudio reports whether model takes input_audio content (the table's
// audio models); other models get a tool's audio as a description.
func takesAudio(provider, model string) bool {
	info, _ := modelinfo.Lookup(provider, model)
	return info.Audio
}

// fileName is the name a PDF is sent under.
func fileName(p sdk.ChatMessagePart) string {
	if p.Name != "" {
		return p.Name
	}
	return "document.pdf"
}

// pdfPart is a PDF as a Chat Completions file content part.
func pdfPart(p sdk.ChatMessagePart) sdkopenai.ChatCompletionContentPartUnionParam {
	return sdkopenai.FileContentPart(sdkopenai.ChatCompletionContentPartFileFileParam{
		FileData: sdkopenai.String(p.URL), Filename: sdkopenai.String(fileName(p)),
	})
}

// responsesPDF is a PDF as a Responses input_file.
func responsesPDF(p sdk.ChatMessagePart) responses.ResponseInputContentUnionParam {
	return responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{
		FileData: sdkopenai.String(p.URL), Filename: sdkopenai.String(fileName(p)),
	}}
}

func dataURL(m llm.ToolMedia) string { return "data:" + m.MediaType + ";base64," + m.Data }

// toolResults maps tool results to tool messages (their text, media data
// removed) followed, when the results returned images (or audio the model
// takes), by one user message carrying them.
func toolResults(parts []sdk.ChatMessagePart, audio bool) []sdkopenai.ChatCompletionMessageParamUnion {
	var (
		out   []sdkopenai.ChatCompletionMessageParamUnion
		media []sdkopenai.ChatCompletionContentPartUnionParam
	)
	for _, p := range parts {
		if p.Type != sdk.PartToolResult {
			continue
		}
		result, ms := llm.SplitToolResult(p.Result)
		text := p
		text.Result = result
		out = append(out, sdkopenai.ToolMessage(resultText(text), p.ToolCallID))
		media = append(media, toolMedia(p, ms, audio)...)
	}
	if len(media) > 0 {
		out = append(out, sdkopenai.UserMessage(media))
	}
	return out
}

// mediaAfterToolRun moves each user message that sits between two tool
// messages (a tool's media, when one step's results came in two tool
// messages: the server's and a client's) after the run of tool messages,
// which must follow their assistant message unbroken.
func mediaAfterToolRun(msgs []sdkopenai.ChatCompletionMessageParamUnion) []sdkopenai.ChatCompletionMessageParamUnion {
	for i := 1; i+1 < len(msgs); i++ {
		if msgs[i].OfUser == nil || msgs[i-1].OfTool == nil || msgs[i+1].OfTool == nil {
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].OfTool != nil {
			end++
		}
		user := msgs[i]
		copy(msgs[i:end-1], msgs[i+1:end])
		msgs[end-1] = user
		i = end - 1
	}
	return msgs
}

// toolMedia is one tool call's media as user content parts, after a line
// naming the call; nil when none can be sent.
func toolMedia(p sdk.ChatMessagePart, ms []llm.ToolMedia, audio bool) []sdkopenai.ChatCompletionContentPartUnionParam {
	var parts []sdkopenai.ChatCompletionContentPartUnionParam
	for _, m := range ms {
		switch {
		case m.IsImage():
			parts = append(parts, sdkopenai.ImageContentPart(sdkopenai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(m)}))
		case audio && m.AudioFormat() != "":
			parts = append(parts, sdkopenai.InputAudioContentPart(sdkopenai.ChatCompletionContentPartInputAudioInputAudioParam{
				Data: m.Data, Format: m.AudioFormat(),
			}))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	head := sdkopenai.TextContentPart(fmt.Sprintf("[returned by the tool call %s (%s); tool messages hold text only]", p.ToolCallID, p.ToolName))
	return append([]sdkopenai.ChatCompletionContentPartUnionParam{head}, parts...)
}

// functionOutputs maps tool results to function_call_output items: the
// text, and the images the tool returned as input_image items of the
// output.
func functionOutputs(parts []sdk.ChatMessagePart) responses.ResponseInputParam {
	var out responses.ResponseInputParam
	for _, p := range parts {
		if p.Type != sdk.PartToolResult {
			continue
		}
		result, ms := llm.SplitToolResult(p.Result)
		text := p
		text.Result = result
		var images responses.ResponseFunctionCallOutputItemListParam
		for _, m := range ms {
			if m.IsImage() {
				images = append(images, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
					ImageURL: sdkopenai.String(dataURL(m)), Detail: responses.ResponseInputImageContentDetailAuto,
				}})
			}
		}
		var item responses.ResponseInputItemUnionParam
		if len(images) == 0 {
			item = responses.ResponseInputItemParamOfFunctionCallOutput(resultText(text))
		} else {
			list := responses.ResponseFunctionCallOutputItemListParam{{OfInputText: &responses.ResponseInputTextContentParam{Text: resultText(text)}}}
			item = responses.ResponseInputItemParamOfFunctionCallOutput(append(list, images...))
		}
		item.OfFunctionCallOutput.CallID = sdkopenai.String(p.ToolCallID)
		out = append(out, item)
	}
	return out
}
