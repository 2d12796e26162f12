package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
)

// ModelAccess resolves one model config for its test exactly as a chat's
// turn would (its provider's client, transport and call settings), without
// the fallback to the default and whether or not it is enabled
// (modelconfig.Service has it).
type ModelAccess interface {
	ModelAccess(ctx context.Context, id uuid.UUID) (modelconfig.Model, error)
}

// The test generation: a tiny prompt, few output tokens.
const (
	modelTestPrompt    = "Reply with the single word OK."
	modelTestMaxTokens = 32
	// modelTestSampleRunes bounds the reply sample of the answer.
	modelTestSampleRunes = 200
	// modelTestErrorRunes bounds the provider error text of the answer.
	modelTestErrorRunes = 500
)

// testModelConfig answers POST /chats/model-configs/{id}/test (admins):
// one small real generation through the config's provider and model,
// with its reasoning effort (the default, clamped to its max) and at most
// modelTestMaxTokens output tokens, bounded by providerTestTimeout. A
// provider failure is a 200 with ok false and the provider's error, which
// the client has masked (the API key never shows, even where a provider
// echoes it).
func (s *Server) testModelConfig(w http.ResponseWriter, r *http.Request, c *caller) error {
	svc, err := s.modelAdmin(c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "modelConfig")
	if err != nil {
		return err
	}
	access, ok := svc.(ModelAccess)
	if !ok {
		return errNoModelAdmin
	}
	out := sdk.ChatModelConfigTest{ChatProviderTest: sdk.ChatProviderTest{Models: []sdk.DiscoveredModel{}}}
	m, err := access.ModelAccess(r.Context(), id)
	switch {
	case errors.Is(err, modelconfig.ErrNotFound):
		return modelConfigError(err)
	case err != nil:
		// The provider's client cannot be built (e.g. its key no longer opens).
		out.Error = clipRunes(err.Error(), modelTestErrorRunes)
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	maxTokens := modelTestMaxTokens
	if m.MaxOutputTokens > 0 {
		maxTokens = min(maxTokens, m.MaxOutputTokens)
	}
	req := llm.Request{
		Model:           m.Config.Model,
		Messages:        []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: modelTestPrompt}}}},
		ReasoningEffort: m.ReasoningEffort(""),
		MaxOutputTokens: maxTokens,
	}
	ctx, cancel := context.WithTimeout(r.Context(), providerTestTimeout)
	defer cancel()
	start := s.deps.Clock.Now()
	res, err := m.Client.Stream(ctx, req, nil)
	out.LatencyMS = s.deps.Clock.Now().Sub(start).Milliseconds()
	if err != nil {
		// The client masks the key out of its errors (redact.Provider).
		out.Error = clipRunes(err.Error(), modelTestErrorRunes)
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	var text strings.Builder
	for _, p := range res.Parts {
		if p.Type == sdk.PartText {
			text.WriteString(p.Text)
		}
	}
	out.OK = true
	out.Sample = clipRunes(strings.TrimSpace(text.String()), modelTestSampleRunes)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// clipRunes shortens s to at most n runes, marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
