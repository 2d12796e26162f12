package modelinfo_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/modelinfo"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	var (
		oSeries = []string{"low", "medium", "high"}
		gpt5    = []string{"minimal", "low", "medium", "high"}
		gpt51   = []string{"none", "low", "medium", "high"}
		gpt52   = []string{"none", "low", "medium", "high", "xhigh"}
		budget  = []string{"minimal", "low", "medium", "high", "xhigh", "max"}
	)
	cases := []struct {
		provider, model string
		ok              bool
		context         int64
		efforts         []string
		vision          bool
	}{
		// OpenAI families and their dated snapshots.
		{"openai", "gpt-4.1", true, 1_047_576, nil, true},
		{"openai", "gpt-4.1-mini-2025-04-14", true, 1_047_576, nil, true},
		{"openai", "GPT-4.1-Nano", true, 1_047_576, nil, true},
		{"openai", "gpt-4o", true, 128_000, nil, true},
		{"openai", "gpt-4o-mini-2024-07-18", true, 128_000, nil, true},
		{"openai", "gpt-4o-audio-preview", true, 128_000, nil, false},
		{"openai", "gpt-4o-mini-audio-preview", true, 128_000, nil, false},
		{"openai", "gpt-audio-2025-08-28", true, 128_000, nil, false},
		{"openai", "gpt-4-turbo-2024-04-09", true, 128_000, nil, true},
		{"openai", "gpt-4-0125-preview", true, 128_000, nil, false},
		{"openai", "gpt-4-turbo-preview", true, 128_000, nil, false},
		{"openai", "gpt-4-vision-preview", true, 128_000, nil, true},
		{"openai", "gpt-4", true, 8_192, nil, false},
		{"openai", "gpt-4-0613", true, 8_192, nil, false},
		{"openai", "gpt-4-32k", true, 32_768, nil, false},
		{"openai", "gpt-3.5-turbo-0125", true, 16_385, nil, false},
		{"openai", "gpt-5", true, 400_000, gpt5, true},
		{"openai", "gpt-5-mini-2025-08-07", true, 400_000, gpt5, true},
		{"openai", "gpt-5-chat-latest", true, 128_000, nil, true},
		{"openai", "gpt-5.1-chat-latest", true, 128_000, nil, true},
		{"openai", "gpt-5-pro", true, 400_000, []string{"high"}, true},
		{"openai", "gpt-5.2-pro-2025-12-11", true, 400_000, []string{"medium", "high", "xhigh"}, true},
		{"openai", "gpt-5-codex", true, 400_000, oSeries, true},
		{"openai", "gpt-5.1-codex-max", true, 400_000, []string{"low", "medium", "high", "xhigh"}, true},
		{"openai", "gpt-5.1", true, 400_000, gpt51, true},
		{"openai", "gpt-5.1-2025-11-13", true, 400_000, gpt51, true},
		{"openai", "gpt-5.2", true, 400_000, gpt52, true},
		{"openai", "gpt-5.9-preview", true, 400_000, gpt52, true}, // a new member of the family
		{"openai", "gpt-6-astra", true, 0, []string{"low", "medium", "high", "xhigh"}, true},
		{"openai", "gpt-6-astra-2027-01-15", true, 0, []string{"low", "medium", "high", "xhigh"}, true},
		{"openai", "gpt-6-sol", true, 0, gpt52, true},
		{"openai", "o1", true, 200_000, oSeries, true},
		{"openai", "o1-pro", true, 200_000, oSeries, true},
		{"openai", "o1-mini", true, 128_000, nil, false},
		{"openai", "o1-preview-2024-09-12", true, 128_000, nil, false},
		{"openai", "o3", true, 200_000, oSeries, true},
		{"openai", "o3-mini-2025-01-31", true, 200_000, oSeries, false},
		{"openai", "o4-mini", true, 200_000, oSeries, true},
		// Anthropic: Claude 3, budget thinking (3.7 to 4.5), effort (4.6 on).
		{"anthropic", "claude-3-5-sonnet-20241022", true, 200_000, nil, true},
		{"anthropic", "claude-3-5-haiku-latest", true, 200_000, nil, false},
		{"anthropic", "claude-3-haiku-20240307", true, 200_000, nil, true},
		{"anthropic", "claude-3-7-sonnet-20250219", true, 200_000, budget, true},
		{"anthropic", "claude-sonnet-4-20250514", true, 200_000, budget, true},
		{"anthropic", "claude-opus-4-1-20250805", true, 200_000, budget, true},
		{"anthropic", "claude-sonnet-4-5", true, 200_000, budget, true},
		{"anthropic", "claude-haiku-4-5-20251001", true, 200_000, budget, true},
		{"anthropic", "claude-opus-4-6", true, 200_000, []string{"low", "medium", "high", "max"}, true},
		{"anthropic", "claude-sonnet-4-6", true, 200_000, []string{"low", "medium", "high", "max"}, true},
		{"anthropic", "claude-opus-4-7", true, 200_000, []string{"low", "medium", "high", "xhigh", "max"}, true},
		{"anthropic", "claude-sonnet-5", true, 200_000, []string{"low", "medium", "high", "xhigh", "max"}, true},
		{"anthropic", "claude-mythos-preview", true, 200_000, []string{"low", "medium", "high", "xhigh", "max"}, true},
		// A vendor's table is only its own models.
		{"openai", "claude-sonnet-4-5", false, 0, nil, false},
		{"anthropic", "gpt-4.1", false, 0, nil, false},
		// Compatible servers and routers: either vendor, prefixes ignored.
		{"ollama", "gpt-oss:20b", true, 131_072, oSeries, false},
		{"openrouter", "openai/gpt-4.1", true, 1_047_576, nil, true},
		{"openrouter", "anthropic/claude-sonnet-4-5", true, 200_000, budget, true},
		{"openai", "openai/gpt-4o", true, 128_000, nil, true},
		// Unknown.
		{"ollama", "llama3.2:3b", false, 0, nil, false},
		{"openai", "gpt-test", false, 0, nil, false},
		{"openai", "", false, 0, nil, false},
		{"openai", "gpt", false, 0, nil, false},
	}
	for _, tc := range cases {
		name := tc.provider + "/" + tc.model
		info, ok := modelinfo.Lookup(tc.provider, tc.model)
		require.Equal(t, tc.ok, ok, name)
		audio := strings.Contains(tc.model, "audio") // the audio models take input_audio
		require.Equal(t, modelinfo.Info{ContextLimit: tc.context, ReasoningEfforts: tc.efforts, Vision: tc.vision, Audio: audio}, info, name)

		limit, ok := modelinfo.ContextLimit(tc.provider, tc.model)
		require.Equal(t, tc.context, limit, name)
		require.Equal(t, tc.context > 0, ok, name)
		require.Equal(t, tc.efforts, modelinfo.ReasoningEfforts(tc.provider, tc.model), name)
		require.Equal(t, tc.efforts != nil, modelinfo.TakesReasoningEffort(tc.provider, tc.model), name)
		require.Equal(t, tc.vision, modelinfo.Vision(tc.provider, tc.model), name)
		// Every scale is in the global order.
		for i := 1; i < len(tc.efforts); i++ {
			require.Less(t, modelinfo.EffortRank(tc.efforts[i-1]), modelinfo.EffortRank(tc.efforts[i]), name)
		}
	}
}

func TestModelEffort(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, model, effort, want string
	}{
		{"openai", "gpt-6-astra", "none", "low"},
		{"openai", "gpt-6-astra-2027-01-15", "minimal", "low"},
		{"openai", "gpt-6-astra", "xhigh", "xhigh"},
		{"openai", "gpt-6-astra", "max", "xhigh"},
		{"openai", "o3", "minimal", "low"},
		{"openai", "o3", "xhigh", "high"},
		{"openai", "gpt-5", "none", "minimal"},
		{"openai", "gpt-5.2", "minimal", "low"},
		{"openai", "gpt-5-pro", "low", "high"},
		{"anthropic", "claude-opus-4-6", "xhigh", "max"},
		{"anthropic", "claude-opus-4-6", "minimal", "low"},
		{"openai", "gpt-4.1", "high", "high"},         // takes none: unchanged, the config decides
		{"ollama", "llama3.2:3b", "medium", "medium"}, // unknown: unchanged
		{"openai", "o3", "bogus", "bogus"},            // not on the scale: unchanged
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, modelinfo.ModelEffort(tc.provider, tc.model, tc.effort), tc.provider+"/"+tc.model+" "+tc.effort)
	}
}

func TestEffortRank(t *testing.T) {
	t.Parallel()
	for i, e := range modelinfo.EffortScale {
		require.Equal(t, i, modelinfo.EffortRank(e))
	}
	require.Equal(t, -1, modelinfo.EffortRank("extreme"))
	require.Equal(t, -1, modelinfo.EffortRank(""))
}
