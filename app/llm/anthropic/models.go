package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// maxListedModels is the page size of ListModels: its first page only.
const maxListedModels = 1000

// maxListBytes bounds the answer ListModels reads.
const maxListBytes = 4 << 20

var _ llm.ModelLister = (*Provider)(nil)

// ListModels reads GET {base}/v1/models (its first page, up to 1,000
// models), sorted by ID, with the configured key (x-api-key) and the API
// version. It takes any answer that is JSON, whatever its content type
// (gateways vary). Errors are *llm.Error, classified by status.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ListedModel, error) {
	fail := func(err error) ([]llm.ListedModel, error) {
		return nil, fmt.Errorf("list models of %s: %w", p.name, err)
	}
	url := fmt.Sprintf("%s/v1/models?limit=%d", strings.TrimRight(p.cfg.BaseURL, "/"), maxListedModels)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fail(&llm.Error{Provider: p.name, Kind: sdk.ChatErrorConfig, Message: err.Error(), Err: err})
	}
	if p.cfg.APIKey != "" {
		req.Header.Set("x-api-key", p.cfg.APIKey)
	}
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return fail(llm.Classify(p.name, err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxListBytes))
	if err != nil {
		return fail(llm.Classify(p.name, fmt.Errorf("read the answer: %w", err)))
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return fail(llm.FromStatus(p.name, res.StatusCode, msg, nil))
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fail(llm.Classify(p.name, fmt.Errorf("decode the answer: %w", err)))
	}
	out := make([]llm.ListedModel, 0, len(list.Data))
	for _, m := range list.Data {
		out = append(out, llm.ListedModel{ID: m.ID, DisplayName: m.DisplayName})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
