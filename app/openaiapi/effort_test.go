package openaiapi_test

import (
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestReasoningEffort: reasoning.effort is the message's reasoning effort,
// stored with it and reported back.
func TestReasoningEffort(t *testing.T) {
	t.Parallel()
	r := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	resp, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Think"),
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}})
	require.NoError(t, err)
	require.Equal(t, shared.ReasoningEffortLow, resp.Reasoning.Effort)
	got, err := r.alice.Responses.Get(r.ctx, resp.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, shared.ReasoningEffortLow, got.Reasoning.Effort, "stored with the message")

	_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Think"),
		Reasoning: shared.ReasoningParam{Effort: "enormous"}})
	e := requireStatus(t, err, 400)
	require.Equal(t, "reasoning.effort", e.Param)
}
