package llmtest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// The content checks below refuse, as the real APIs do, user content that
// is not one of their shapes: a provider that sends an image wrongly gets
// the 400 it would get in production.

// imageMediaTypes are the image types both OpenAI and Anthropic accept.
var imageMediaTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// checkDataURL checks an image URL: http(s), or a base64 data: URL of an
// accepted image type whose data decodes.
func checkDataURL(url string) error {
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return nil
	}
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return fmt.Errorf("invalid image URL %.40q: expected a URL or a base64 data URL", url)
	}
	mediaType, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return fmt.Errorf("invalid image data URL: expected ;base64,")
	}
	return checkBase64Image(mediaType, data)
}

func checkBase64Image(mediaType, data string) error {
	if !imageMediaTypes[mediaType] {
		return fmt.Errorf("invalid image media type %q", mediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
		return fmt.Errorf("invalid base64 image data")
	}
	return nil
}

// checkOpenAIMessages checks Chat Completions message content: a string,
// or parts {type:text,text} and {type:image_url,image_url:{url}} (images
// only in user messages).
func checkOpenAIMessages(msgs []any) (int, string) {
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		parts, isList := m["content"].([]any)
		if !isList {
			continue
		}
		for j, rp := range parts {
			p, _ := rp.(map[string]any)
			where := fmt.Sprintf("messages[%d].content[%d]", i, j)
			switch p["type"] {
			case "text":
				if _, ok := p["text"].(string); !ok {
					return http.StatusBadRequest, where + ".text: expected a string"
				}
			case "image_url":
				if m["role"] != "user" {
					return http.StatusBadRequest, where + ": image content is only allowed in user messages"
				}
				img, _ := p["image_url"].(map[string]any)
				url, _ := img["url"].(string)
				if err := checkDataURL(url); err != nil {
					return http.StatusBadRequest, where + ".image_url.url: " + err.Error()
				}
			case "file":
				if m["role"] != "user" {
					return http.StatusBadRequest, where + ": file content is only allowed in user messages"
				}
				f, _ := p["file"].(map[string]any)
				if err := checkFileData(f["file_data"], f["file_id"]); err != nil {
					return http.StatusBadRequest, where + ".file: " + err.Error()
				}
				if _, ok := f["file_id"].(string); !ok {
					if name, _ := f["filename"].(string); name == "" {
						return http.StatusBadRequest, where + ".file.filename: required with file_data"
					}
				}
			case "input_audio":
				if m["role"] != "user" {
					return http.StatusBadRequest, where + ": audio content is only allowed in user messages"
				}
				a, _ := p["input_audio"].(map[string]any)
				data, _ := a["data"].(string)
				if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
					return http.StatusBadRequest, where + ".input_audio.data: invalid base64 audio data"
				}
				if f := a["format"]; f != "wav" && f != "mp3" {
					return http.StatusBadRequest, fmt.Sprintf("%s.input_audio.format: invalid value %v (wav or mp3)", where, f)
				}
			default:
				return http.StatusBadRequest, fmt.Sprintf("%s.type: invalid value %v", where, p["type"])
			}
		}
	}
	return 0, ""
}

// checkFileData checks a file given by file_data (a base64 data: URL of a
// PDF) or file_id.
func checkFileData(data, id any) error {
	if s, ok := id.(string); ok && s != "" {
		return nil
	}
	url, _ := data.(string)
	rest, ok := strings.CutPrefix(url, "data:application/pdf;base64,")
	if !ok {
		return fmt.Errorf("file_data: expected a base64 data URL of application/pdf, got %.40q", url)
	}
	return checkPDF(rest)
}

// checkPDF checks base64 PDF data: it decodes and starts with %PDF-.
func checkPDF(data string) error {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || !strings.HasPrefix(string(raw), "%PDF-") {
		return fmt.Errorf("invalid base64 PDF data")
	}
	return nil
}

// checkAnthropicMessages checks image blocks: {type:image, source:{type:
// base64, media_type, data}} (or a url source), also inside a
// tool_result's content, and document blocks of a base64 PDF.
func checkAnthropicMessages(msgs []any) (int, string) {
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		blocks, _ := m["content"].([]any)
		for j, rb := range blocks {
			b, _ := rb.(map[string]any)
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			if b["type"] == "image" || b["type"] == "document" || b["type"] == "tool_result" {
				if m["role"] != "user" {
					return http.StatusBadRequest, where + ": " + fmt.Sprint(b["type"]) + " blocks are only allowed in user turns"
				}
			}
			switch b["type"] {
			case "image":
				if status, msg := checkAnthropicImage(b, where+".image.source"); status != 0 {
					return status, msg
				}
			case "document":
				src, _ := b["source"].(map[string]any)
				data, _ := src["data"].(string)
				if src["type"] != "base64" || src["media_type"] != "application/pdf" {
					return http.StatusBadRequest, where + ".document.source: expected a base64 application/pdf source"
				}
				if err := checkPDF(data); err != nil {
					return http.StatusBadRequest, where + ".document.source.data: " + err.Error()
				}
			case "tool_result":
				content, _ := b["content"].([]any)
				for k, rc := range content {
					c, _ := rc.(map[string]any)
					at := fmt.Sprintf("%s.tool_result.content.%d", where, k)
					switch c["type"] {
					case "text":
					case "image":
						if status, msg := checkAnthropicImage(c, at+".image.source"); status != 0 {
							return status, msg
						}
					default:
						return http.StatusBadRequest, fmt.Sprintf("%s.type: invalid value %v", at, c["type"])
					}
				}
			}
		}
	}
	return 0, ""
}

// checkAnthropicImage checks one image block's source.
func checkAnthropicImage(b map[string]any, where string) (int, string) {
	src, _ := b["source"].(map[string]any)
	switch src["type"] {
	case "base64":
		mt, _ := src["media_type"].(string)
		data, _ := src["data"].(string)
		if err := checkBase64Image(mt, data); err != nil {
			return http.StatusBadRequest, where + ": " + err.Error()
		}
	case "url":
		if u, _ := src["url"].(string); u == "" {
			return http.StatusBadRequest, where + ".url: Field required"
		}
	default:
		return http.StatusBadRequest, fmt.Sprintf("%s.type: Input tag %v is not one of base64, url", where, src["type"])
	}
	return 0, ""
}

// checkResponsesInput checks Responses message content lists: input_text
// {text}, input_image {image_url or file_id, detail} and input_file
// {file_data (a PDF data URL), file_id or file_url}; and the item list of a
// function_call_output (input_text and input_image).
func checkResponsesInput(input any) (int, string) {
	items, _ := input.([]any)
	for i, raw := range items {
		it, _ := raw.(map[string]any)
		if it["type"] == "function_call_output" {
			if out, isList := it["output"].([]any); isList {
				if status, msg := checkResponsesParts(out, fmt.Sprintf("input[%d].output", i), false); status != 0 {
					return status, msg
				}
			}
			continue
		}
		parts, isList := it["content"].([]any)
		if !isList || (it["type"] != nil && it["type"] != "message") {
			continue
		}
		if status, msg := checkResponsesParts(parts, fmt.Sprintf("input[%d].content", i), true); status != 0 {
			return status, msg
		}
	}
	return 0, ""
}

func checkResponsesParts(parts []any, at string, message bool) (int, string) {
	for j, rp := range parts {
		p, _ := rp.(map[string]any)
		where := fmt.Sprintf("%s[%d]", at, j)
		switch p["type"] {
		case "input_text":
			if _, ok := p["text"].(string); !ok {
				return http.StatusBadRequest, where + ".text: expected a string"
			}
		case "output_text":
			if _, ok := p["text"].(string); !ok || !message {
				return http.StatusBadRequest, where + ".text: expected a string"
			}
		case "input_image":
			url, _ := p["image_url"].(string)
			if _, hasFile := p["file_id"].(string); !hasFile {
				if err := checkDataURL(url); err != nil {
					return http.StatusBadRequest, where + ".image_url: " + err.Error()
				}
			}
			if d, _ := p["detail"].(string); d != "low" && d != "high" && d != "auto" && d != "original" {
				return http.StatusBadRequest, where + ".detail: expected low, high, auto or original"
			}
		case "input_file":
			if _, hasURL := p["file_url"].(string); !hasURL {
				if err := checkFileData(p["file_data"], p["file_id"]); err != nil {
					return http.StatusBadRequest, where + ": " + err.Error()
				}
			}
		default:
			return http.StatusBadRequest, fmt.Sprintf("%s.type: invalid value %v", where, p["type"])
		}
	}
	return 0, ""
}
