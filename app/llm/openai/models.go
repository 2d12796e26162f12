package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	sdkopenai "github.com/openai/openai-go/v3"

	"github.com/chatd/chatd/app/llm"
)

// Model is one model an OpenAI-compatible server lists.
type Model struct {
	// ID is the model's name in requests (llm.Request.Model).
	ID string
	// OwnedBy is the list's owned_by ("openai", "system", "library", ...).
	OwnedBy string
	// ContextLimit is the context window the server reports in tokens; 0
	// when it reports none (OpenAI itself never does).
	ContextLimit int64
}

// contextFields are the fields of a /v1/models entry that servers put the
// context window in: vLLM's max_model_len, OpenRouter's and Together's
// context_length, Groq's context_window, LM Studio's max_context_length.
var contextFields = []string{"max_model_len", "context_length", "context_window", "max_context_length"}

// ListModels lists the models of the server cfg points at (GET
// {BaseURL}/models), sorted by ID, with the context window where the
// server reports one: in the list entry (vLLM, OpenRouter, Groq, LM
// Studio), or, for Ollama, whose list has none, from POST /api/show at the
// server root: the num_ctx parameter the model was set up with, else the
// model's own maximum (model_info "<arch>.context_length"). Ollama may run
// a model with a smaller window (OLLAMA_CONTEXT_LENGTH); a num_ctx in the
// model config is what tells it. /api/show is never asked of the default
// BaseURL (api.openai.com).
//
// Errors are *llm.Error wrapped with context, classified as Stream's are
// (errors.As gives the kind: auth for a bad key, config for a wrong URL).
// The signature is stable: the model-configuration API and its "discover
// models" button use it.
func ListModels(ctx context.Context, cfg Config) ([]Model, error) {
	cfg = withDefaults(cfg)
	p := New(cfg)
	page, err := p.client.Models.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list models of %s: %w", cfg.Name, p.classify(ctx, err))
	}
	out := make([]Model, 0, len(page.Data))
	for _, m := range page.Data {
		out = append(out, Model{ID: m.ID, OwnedBy: m.OwnedBy, ContextLimit: listedContext(m)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if strings.TrimRight(cfg.BaseURL, "/") != DefaultBaseURL {
		if err := ollamaContexts(ctx, cfg, out); err != nil {
			return nil, fmt.Errorf("list models of %s: %w", cfg.Name, err)
		}
	}
	return out, nil
}

var _ llm.ModelLister = (*Provider)(nil)

// ListModels implements llm.ModelLister: ListModels with p's settings.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ListedModel, error) {
	listed, err := ListModels(ctx, p.cfg)
	if err != nil {
		return nil, err
	}
	out := make([]llm.ListedModel, 0, len(listed))
	for _, m := range listed {
		out = append(out, llm.ListedModel{ID: m.ID, ContextLimit: m.ContextLimit})
	}
	return out, nil
}

// listedContext reads the context window from a list entry's extra fields.
func listedContext(m sdkopenai.Model) int64 {
	for _, key := range contextFields {
		f, ok := m.JSON.ExtraFields[key]
		if !ok {
			continue
		}
		if n := positiveInt(json.RawMessage(f.Raw())); n > 0 {
			return n
		}
	}
	return 0
}

// positiveInt decodes a JSON number (or a numeric string) that is a
// positive integer; 0 otherwise.
func positiveInt(raw json.RawMessage) int64 {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// numCtx finds the num_ctx line of an Ollama parameters text.
var numCtx = regexp.MustCompile(`(?m)^\s*num_ctx\s+(\d+)\s*$`)

// ollamaContexts fills in the context windows the list left out by asking
// Ollama's /api/show. A server that does not answer the first question
// with a model_info is not Ollama, and is asked nothing more.
func ollamaContexts(ctx context.Context, cfg Config, models []Model) error {
	root := strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	asked := false
	for i := range models {
		if models[i].ContextLimit > 0 {
			continue
		}
		show, ok, err := ollamaShow(ctx, cfg, root, models[i].ID)
		if err != nil {
			return err
		}
		if !ok {
			if !asked {
				return nil // not Ollama
			}
			continue
		}
		asked = true
		if m := numCtx.FindStringSubmatch(show.Parameters); m != nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
				models[i].ContextLimit = n
				continue
			}
		}
		for key, raw := range show.ModelInfo {
			if strings.HasSuffix(key, ".context_length") {
				if n := positiveInt(raw); n > 0 {
					models[i].ContextLimit = n
					break
				}
			}
		}
	}
	return nil
}

type ollamaShowResponse struct {
	Parameters string                     `json:"parameters"`
	ModelInfo  map[string]json.RawMessage `json:"model_info"`
}

// ollamaShow asks POST {root}/api/show about model. ok is false when the
// server has no such route or model (any 4xx, or an answer without
// model_info); err is set only for a cancelled context.
func ollamaShow(ctx context.Context, cfg Config, root, model string) (ollamaShowResponse, bool, error) {
	var show ollamaShowResponse
	body, err := json.Marshal(map[string]string{"model": model})
	if err != nil {
		return show, false, fmt.Errorf("encode /api/show request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/api/show", bytes.NewReader(body))
	if err != nil {
		return show, false, nil // a base URL /api/show cannot be built from
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	res, err := cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return show, false, llm.Classify(cfg.Name, fmt.Errorf("ollama /api/show: %w", ctx.Err()))
		}
		return show, false, nil
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		return show, false, nil
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 8<<20)).Decode(&show); err != nil || show.ModelInfo == nil {
		return show, false, nil
	}
	return show, true, nil
}
