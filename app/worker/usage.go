package worker

import (
	"math"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/store"
)

// Price is a model config's optional price per million tokens; the zero
// Price costs nothing.
type Price struct {
	InputPerMillion  float64
	OutputPerMillion float64
}

// CostNanos is what a call's usage costs, in billionths of the price's
// currency unit. A price per million tokens times tokens is millionths.
func (p Price) CostNanos(u llm.Usage) int64 {
	return int64(math.Round((float64(u.InputTokens)*p.InputPerMillion + float64(u.OutputTokens)*p.OutputPerMillion) * 1000))
}

// charge is the ledger entry of a call of model that reported u.
func charge(model Model, kind string, u llm.Usage) *chatstate.Charge {
	return &chatstate.Charge{
		Kind: kind, ModelConfigID: uuid.NullUUID{UUID: model.ID, Valid: model.ID != uuid.Nil},
		Provider: model.Provider.Name(), Model: model.Name,
		UsageTokens: store.UsageTokens{
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CacheReadTokens,
			ReasoningTokens: u.ReasoningTokens, CostNanos: model.Price.CostNanos(u),
		},
	}
}
