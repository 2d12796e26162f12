// Package modelinfo is a built-in table of well-known models: context
// window, the reasoning efforts a model takes, and whether it reads images.
// chatd uses it when a model config leaves these unset (the order:
// the config, else this table, else discovery through openai.ListModels).
//
// Models are matched by family patterns, first match wins, so a dated
// snapshot (gpt-4.1-2025-04-14) or a new member of a family (gpt-5.9) gets
// its family's facts. The table errs low on context limits: compacting a
// little early is harmless, overflowing the window is not.
package modelinfo

import "strings"

// Reasoning efforts of the global scale, in order (spec: "Reasoning
// effort").
const (
	EffortNone    = "none"
	EffortMinimal = "minimal"
	EffortLow     = "low"
	EffortMedium  = "medium"
	EffortHigh    = "high"
	EffortXHigh   = "xhigh"
	EffortMax     = "max"
)

// EffortScale is the global scale none < minimal < low < medium < high <
// xhigh < max.
var EffortScale = []string{EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortMax}

// RequestEfforts are the efforts a request may ask for (a message over the
// API, a spawn_agent call): the scale without its ends, which only a model
// config's bounds name.
var RequestEfforts = EffortScale[1 : len(EffortScale)-1 : len(EffortScale)-1]

// EffortRank is effort's position on EffortScale, -1 when it is not on it.
func EffortRank(effort string) int {
	for i, e := range EffortScale {
		if e == effort {
			return i
		}
	}
	return -1
}

// Info is what the table knows of one model.
type Info struct {
	// ContextLimit is the context window in tokens; 0 when the table does
	// not know it.
	ContextLimit int64
	// ReasoningEfforts are the efforts the model takes, in scale order;
	// nil when it takes no reasoning effort (sending one is a 400).
	ReasoningEfforts []string
	// Vision: the model takes image input.
	Vision bool
	// Audio: the model takes audio input (Chat Completions input_audio).
	Audio bool
}

// Lookup returns what the table knows of model at provider. Provider
// "openai" and "anthropic" match their own vendor's models; any other
// provider (an OpenAI-compatible server, a proxy) matches either vendor's,
// so gpt-oss on Ollama or openai/gpt-4.1 on a router are known. A "vendor/"
// prefix of the model and the case are ignored.
func Lookup(provider, model string) (Info, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	vendor := ""
	if i := strings.LastIndex(m, "/"); i >= 0 {
		vendor, m = m[:i], m[i+1:]
	}
	if m == "" {
		return Info{}, false
	}
	var tables []table
	switch p := strings.ToLower(provider); {
	case p == "openai" || vendor == "openai":
		tables = []table{openAI}
	case p == "anthropic" || vendor == "anthropic":
		tables = []table{anthropic}
	default:
		tables = []table{openAI, anthropic}
	}
	for _, t := range tables {
		for _, e := range t {
			if match(e.pattern, m) {
				return e.info, true
			}
		}
	}
	return Info{}, false
}

// ContextLimit is the model's context window in tokens, when the table
// knows it.
func ContextLimit(provider, model string) (int64, bool) {
	info, ok := Lookup(provider, model)
	return info.ContextLimit, ok && info.ContextLimit > 0
}

// ReasoningEfforts are the efforts the model takes, in scale order; nil
// when it takes none or the table does not know the model.
func ReasoningEfforts(provider, model string) []string {
	info, _ := Lookup(provider, model)
	return info.ReasoningEfforts
}

// TakesReasoningEffort reports whether the table knows the model to take a
// reasoning effort.
func TakesReasoningEffort(provider, model string) bool {
	return len(ReasoningEfforts(provider, model)) > 0
}

// Vision reports whether the table knows the model to take images.
func Vision(provider, model string) bool {
	info, _ := Lookup(provider, model)
	return info.Vision
}

// ModelEffort maps effort, a value of the global scale, to one the model
// takes: itself when the model takes it, else the lowest accepted effort
// above it, else the highest accepted one. GPT-6 Astra, for instance,
// takes neither none nor minimal and gets low. An effort for a model the
// table does not know, or that takes none, is returned unchanged: the
// provider is the judge then.
func ModelEffort(provider, model, effort string) string {
	accepted := ReasoningEfforts(provider, model)
	rank := EffortRank(effort)
	if len(accepted) == 0 || rank < 0 {
		return effort
	}
	for _, a := range accepted {
		if EffortRank(a) >= rank {
			return a
		}
	}
	return accepted[len(accepted)-1]
}

type entry struct {
	pattern string // '*' matches any run of characters
	info    Info
}

type table []entry

// match reports whether name matches pattern, where '*' matches any run of
// characters (including none) and every other character itself.
func match(pattern, name string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == name
	}
	if !strings.HasPrefix(name, pattern[:star]) {
		return false
	}
	rest := pattern[star+1:]
	for i := star; i <= len(name); i++ {
		if match(rest, name[i:]) {
			return true
		}
	}
	return false
}

// Effort scales of the table.
var (
	effortsOSeries  = []string{EffortLow, EffortMedium, EffortHigh}
	effortsGPT5     = []string{EffortMinimal, EffortLow, EffortMedium, EffortHigh}
	effortsGPT51    = []string{EffortNone, EffortLow, EffortMedium, EffortHigh}
	effortsGPT52    = []string{EffortNone, EffortLow, EffortMedium, EffortHigh, EffortXHigh}
	effortsCodexMax = []string{EffortLow, EffortMedium, EffortHigh, EffortXHigh}
	effortsPro      = []string{EffortHigh}
	effortsPro52    = []string{EffortMedium, EffortHigh, EffortXHigh}
	// GPT-6 Astra rejects none and lists no minimal (spec: "Reasoning
	// effort").
	effortsAstra = []string{EffortLow, EffortMedium, EffortHigh, EffortXHigh}
	// Claude models with budget thinking: the adapter turns every effort
	// into a budget_tokens.
	effortsClaudeBudget = []string{EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortMax}
	// Claude 4.6 takes output_config.effort low, medium, high or max
	// (minimal becomes low in the adapter).
	effortsClaude46 = []string{EffortLow, EffortMedium, EffortHigh, EffortMax}
	// Later Claude models: the SDK's whole output_config.effort scale.
	effortsClaudeLater = []string{EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortMax}
)

// openAI is OpenAI's models, most specific patterns first.
var openAI = table{
	// GPT-6: the context window is not in the table yet.
	{"gpt-6-astra*", Info{ReasoningEfforts: effortsAstra, Vision: true}},
	{"gpt-6*", Info{ReasoningEfforts: effortsGPT52, Vision: true}},

	// GPT-5 chat models are not reasoning models.
	{"gpt-5*-chat*", Info{ContextLimit: 128_000, Vision: true}},
	{"gpt-5-pro*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsPro, Vision: true}},
	{"gpt-5.*-pro*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsPro52, Vision: true}},
	{"gpt-5.1-codex-max*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsCodexMax, Vision: true}},
	{"gpt-5*codex*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsOSeries, Vision: true}},
	{"gpt-5.1*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsGPT51, Vision: true}},
	{"gpt-5.*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsGPT52, Vision: true}},
	{"gpt-5", Info{ContextLimit: 400_000, ReasoningEfforts: effortsGPT5, Vision: true}},
	{"gpt-5-*", Info{ContextLimit: 400_000, ReasoningEfforts: effortsGPT5, Vision: true}},

	{"gpt-4.1*", Info{ContextLimit: 1_047_576, Vision: true}},
	{"gpt-4o*audio*", Info{ContextLimit: 128_000, Audio: true}},
	{"gpt-audio*", Info{ContextLimit: 128_000, Audio: true}},
	{"gpt-4o*", Info{ContextLimit: 128_000, Vision: true}},
	{"chatgpt-4o*", Info{ContextLimit: 128_000, Vision: true}},
	{"gpt-4-vision*", Info{ContextLimit: 128_000, Vision: true}},
	{"gpt-4-*-preview", Info{ContextLimit: 128_000}}, // gpt-4-turbo-preview too
	{"gpt-4-turbo*", Info{ContextLimit: 128_000, Vision: true}},
	{"gpt-4-32k*", Info{ContextLimit: 32_768}},
	{"gpt-4", Info{ContextLimit: 8_192}},
	{"gpt-4-0*", Info{ContextLimit: 8_192}},
	{"gpt-3.5-turbo*", Info{ContextLimit: 16_385}},

	// The o series. o1-mini and o1-preview take no reasoning_effort.
	{"o1-mini*", Info{ContextLimit: 128_000}},
	{"o1-preview*", Info{ContextLimit: 128_000}},
	{"o1*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsOSeries, Vision: true}},
	{"o3-mini*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsOSeries}},
	{"o3*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsOSeries, Vision: true}},
	{"o4-mini*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsOSeries, Vision: true}},
	{"codex-mini*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsOSeries, Vision: true}},

	// Open-weight models, as Ollama (gpt-oss:20b) and vLLM serve them.
	{"gpt-oss*", Info{ContextLimit: 131_072, ReasoningEfforts: effortsOSeries}},
}

// anthropic is Anthropic's models, most specific patterns first. Every
// Claude model from Claude 3 on has a 200k window (longer ones are betas)
// and reads images, except Claude 3.5 Haiku.
var anthropic = table{
	{"claude-3-7-sonnet*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeBudget, Vision: true}},
	{"claude-3-5-haiku*", Info{ContextLimit: 200_000}},
	{"claude-3*", Info{ContextLimit: 200_000, Vision: true}},
	{"claude-*-4-6*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaude46, Vision: true}},
	{"claude-*-4-7*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeLater, Vision: true}},
	{"claude-*-4-8*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeLater, Vision: true}},
	{"claude-*-4-9*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeLater, Vision: true}},
	// Claude 4 to 4.5: budget thinking.
	{"claude-*-4*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeBudget, Vision: true}},
	// Claude 5 and names without a version are assumed new.
	{"claude-*", Info{ContextLimit: 200_000, ReasoningEfforts: effortsClaudeLater, Vision: true}},
}
