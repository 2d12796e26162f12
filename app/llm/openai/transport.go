package openai

import "strings"

// UsesResponsesAPI reports whether requests for model go over the Responses
// API rather than Chat Completions (spec: "OpenAI transport selection"). A
// non-nil override wins: true forces Responses, false forces Chat
// Completions. When it is nil, models of the static known-model list use
// Responses, and any other model, such as one released after this list
// or served by an OpenAI-compatible server, uses Chat Completions. GPT-6
// Astra and its dated snapshots default to Responses because their
// function calling is Responses-only.
//
// OpenAI-compatible providers (Ollama, vLLM, ...) always speak Chat
// Completions: their callers pass a false override.
func UsesResponsesAPI(model string, override *bool) bool {
	if override != nil {
		return *override
	}
	if IsGPT6Astra(model) {
		return true
	}
	return responsesModels[strings.ToLower(model)]
}

// IsGPT6Astra reports whether model is GPT-6 Astra or one of its dated
// snapshots (a case-insensitive prefix match on gpt-6-astra).
func IsGPT6Astra(model string) bool {
	return strings.HasPrefix(strings.ToLower(model), "gpt-6-astra")
}

// responsesModels is the known-model list: the OpenAI models of the SDK's
// model constants that the Responses API serves. Audio and search-preview
// models and the GPT-3.5/GPT-4 generation stay on Chat Completions.
var responsesModels = setOf(
	// GPT-6 and GPT-5 families.
	"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-sol", "gpt-6-luna", "gpt-6-cyber", "gpt-6-rosalind",
	"gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-5.6-cyber",
	"gpt-5.5", "gpt-5.5-2026-04-23", "gpt-5.5-pro", "gpt-5.5-pro-2026-04-23",
	"gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.4-mini-2026-03-17", "gpt-5.4-nano-2026-03-17",
	"gpt-5.3-chat-latest",
	"gpt-5.2", "gpt-5.2-2025-12-11", "gpt-5.2-chat-latest", "gpt-5.2-pro", "gpt-5.2-pro-2025-12-11",
	"gpt-5.1", "gpt-5.1-2025-11-13", "gpt-5.1-codex", "gpt-5.1-codex-max", "gpt-5.1-mini", "gpt-5.1-chat-latest",
	"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-2025-08-07", "gpt-5-mini-2025-08-07", "gpt-5-nano-2025-08-07",
	"gpt-5-chat-latest", "gpt-5-codex", "gpt-5-pro", "gpt-5-pro-2025-10-06",
	// GPT-4.1 and GPT-4o.
	"gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14",
	"gpt-4o", "gpt-4o-2024-11-20", "gpt-4o-2024-08-06", "gpt-4o-2024-05-13", "gpt-4o-mini", "gpt-4o-mini-2024-07-18",
	"chatgpt-4o-latest",
	// The o series.
	"o4-mini", "o4-mini-2025-04-16", "o4-mini-deep-research", "o4-mini-deep-research-2025-06-26",
	"o3", "o3-2025-04-16", "o3-mini", "o3-mini-2025-01-31", "o3-pro", "o3-pro-2025-06-10",
	"o3-deep-research", "o3-deep-research-2025-06-26",
	"o1", "o1-2024-12-17", "o1-pro", "o1-pro-2025-03-19",
	// Responses-only models.
	"codex-mini-latest", "computer-use-preview", "computer-use-preview-2025-03-11",
	"gpt-daybreak-blue-latest", "gpt-daybreak-red-latest", "gpt-rosalind-research",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
