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
			default:
				return http.StatusBadRequest, fmt.Sprintf("%s.type: invalid value %v", where, p["type"])
			}
		}
	}
	return 0, ""
}

// checkAnthropicMessages checks image blocks: {type:image, source:{type:
// base64, media_type, data}} (or a url source).
func checkAnthropicMessages(msgs []any) (int, string) {
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		blocks, _ := m["content"].([]any)
		for j, rb := range blocks {
			b, _ := rb.(map[string]any)
			if b["type"] != "image" {
				continue
			}
			where := fmt.Sprintf("messages.%d.content.%d.image.source", i, j)
			if m["role"] != "user" {
				return http.StatusBadRequest, where + ": images are only allowed in user turns"
			}
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
		}
	}
	return 0, ""
}

// checkResponsesInput checks Responses message content lists: input_text
// {text} and input_image {image_url or file_id, detail}.
func checkResponsesInput(input any) (int, string) {
	items, _ := input.([]any)
	for i, raw := range items {
		it, _ := raw.(map[string]any)
		parts, isList := it["content"].([]any)
		if !isList || (it["type"] != nil && it["type"] != "message") {
			continue
		}
		for j, rp := range parts {
			p, _ := rp.(map[string]any)
			where := fmt.Sprintf("input[%d].content[%d]", i, j)
			switch p["type"] {
			case "input_text", "output_text":
				if _, ok := p["text"].(string); !ok {
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
			default:
				return http.StatusBadRequest, fmt.Sprintf("%s.type: invalid value %v", where, p["type"])
			}
		}
	}
	return 0, ""
}
