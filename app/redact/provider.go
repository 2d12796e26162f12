package redact

import (
	"context"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// Provider returns p with every error it returns passed through s.Error:
// the way out of the provider layer, before the worker stores, logs or
// streams a failure and before an admin's connection test shows one. It
// lists models when p does (llm.ModelLister) and lists none otherwise.
func Provider(p llm.Provider, s *Secrets) llm.Provider {
	return &provider{p: p, s: s}
}

type provider struct {
	p llm.Provider
	s *Secrets
}

var _ llm.ModelLister = (*provider)(nil)

func (r *provider) Name() string { return r.p.Name() }

func (r *provider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	res, err := r.p.Stream(ctx, req, onPart)
	return res, r.s.Error(err)
}

func (r *provider) ListModels(ctx context.Context) ([]llm.ListedModel, error) {
	l, ok := r.p.(llm.ModelLister)
	if !ok {
		return nil, nil
	}
	models, err := l.ListModels(ctx)
	return models, r.s.Error(err)
}
