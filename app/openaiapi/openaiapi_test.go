package openaiapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

const model = "openai/test-model"

// rig is a running chatd with users alice and bob, each with an official
// OpenAI client pointed at its /v1.
type rig struct {
	ctx        context.Context
	app        *app.App
	llm        *llmtest.Server
	alice, bob openai.Client
	url        string
}

func testConfig(llmURL string) config.Config {
	return config.Config{
		BootstrapToken: auth.NewToken(), OpenAIBaseURL: llmURL, DefaultModel: model,
		Worker: worker.Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
			SyncInterval: 50 * time.Millisecond, AcquireInterval: 100 * time.Millisecond},
	}
}

func setup(t *testing.T, newStore func(t testing.TB) store.Store) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	r := &rig{ctx: ctx, llm: llmtest.NewOpenAI(t)}
	a, url := serve(t, ctx, testConfig(r.llm.URL), newStore(t))
	r.app, r.url = a, url
	r.alice = client(t, url, token(t, a, "alice"))
	r.bob = client(t, url, token(t, a, "bob"))
	return r
}

// serve starts an app over s, serving HTTP; runCtx ends its worker.
func serve(t *testing.T, runCtx context.Context, cfg config.Config, s store.Store) (*app.App, string) {
	t.Helper()
	a, err := app.NewWithStore(context.Background(), cfg, s, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	a.SetAdvertiseURL(srv.URL)
	require.NoError(t, a.Start(runCtx))
	t.Cleanup(a.Stop)
	return a, srv.URL
}

func token(t *testing.T, a *app.App, name string) string {
	t.Helper()
	tok, _, err := auth.CreateToken(context.Background(), a.Internals().Store, name, false, "test", time.Now())
	require.NoError(t, err)
	return tok
}

func client(t *testing.T, url, tok string) openai.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey(tok), option.WithMaxRetries(0), option.WithHTTPClient(hc))
}

func text(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

// requireStatus checks err is an OpenAI API error with status.
func requireStatus(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var e *openai.Error
	require.True(t, errors.As(err, &e), "want an API error %d, got %v", status, err)
	require.Equal(t, status, e.StatusCode, e.Error())
	return e
}

// collected are the events of one or more streams of a response.
type collected struct {
	seqs  []int64
	text  strings.Builder
	types []string
	final *responses.Response
}

// read takes events from s until it ends or until stop says so after
// an event, then closes it.
func (c *collected) read(t *testing.T, s *ssestream.Stream[responses.ResponseStreamEventUnion], stop func(responses.ResponseStreamEventUnion) bool) {
	t.Helper()
	defer s.Close()
	for s.Next() {
		e := s.Current()
		c.seqs = append(c.seqs, e.SequenceNumber)
		c.types = append(c.types, e.Type)
		switch e.Type {
		case "response.output_text.delta":
			c.text.WriteString(e.Delta)
		case "response.completed", "response.failed", "response.incomplete":
			r := e.Response
			c.final = &r
		}
		if stop != nil && stop(e) {
			return
		}
	}
	require.NoError(t, s.Err())
}

// fixed are the numbers of the events that are not deltas.
func (c *collected) fixed() []int64 {
	var out []int64
	for i, typ := range c.types {
		if !strings.HasSuffix(typ, ".delta") {
			out = append(out, c.seqs[i])
		}
	}
	return out
}

func (c *collected) last() int64 { return c.seqs[len(c.seqs)-1] }

func requireIncreasing(t *testing.T, seqs []int64) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		require.Greater(t, seqs[i], seqs[i-1], "sequence numbers %v", seqs)
	}
}

func TestPlainResponse(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		r.llm.Enqueue(llmtest.TextChunks("Hello", " from", " chatd."))
		resp, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{
			Model: model, Input: text("Hi"), Instructions: openai.String("Be brief."),
			Metadata: shared.Metadata{"topic": "greeting"},
		})
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCompleted, resp.Status)
		require.Equal(t, "response", string(resp.Object))
		require.Equal(t, "Hello from chatd.", resp.OutputText())
		require.Equal(t, model, resp.Model)
		require.Equal(t, "greeting", resp.Metadata["topic"])
		require.EqualValues(t, llmtest.DefaultUsage.InputTokens, resp.Usage.InputTokens)
		require.EqualValues(t, llmtest.DefaultUsage.OutputTokens, resp.Usage.OutputTokens)
		// The instructions reached the model as the system prompt.
		body := string(r.llm.Requests()[0].Body)
		require.Contains(t, body, "Be brief.")

		got, err := r.alice.Responses.Get(r.ctx, resp.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		require.Equal(t, resp.OutputText(), got.OutputText())
		require.Equal(t, responses.ResponseStatusCompleted, got.Status)

		items, err := r.alice.Responses.InputItems.List(r.ctx, resp.ID, responses.InputItemListParams{})
		require.NoError(t, err)
		require.Len(t, items.Data, 1)
		require.Equal(t, "Hi", items.Data[0].AsMessage().Content[0].Text)

		// A second response continues the same chat.
		r.llm.Enqueue(llmtest.TextChunks("Again."))
		next, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{
			Model: model, Input: text("Once more"), PreviousResponseID: openai.String(resp.ID),
		})
		require.NoError(t, err)
		require.Equal(t, "Again.", next.OutputText())
		require.Len(t, r.llm.Requests()[1].JSON(t)["messages"], 4, "system, first prompt, first answer, second prompt")

		// Refusals name their field.
		_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("x"), Store: openai.Bool(false)})
		e := requireStatus(t, err, http.StatusBadRequest)
		require.Equal(t, "store", e.Param)
		_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("x"),
			Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}})
		e = requireStatus(t, err, http.StatusBadRequest)
		require.Equal(t, "tools[0].type", e.Param)
		_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: "no/such-model", Input: text("x")})
		e = requireStatus(t, err, http.StatusBadRequest)
		require.Equal(t, "model", e.Param)

		// Models, and an unknown path answers the OpenAI error shape.
		models, err := r.alice.Models.List(r.ctx)
		require.NoError(t, err)
		require.Equal(t, model, models.Data[0].ID)
		m, err := r.alice.Models.Get(r.ctx, model)
		require.NoError(t, err)
		require.Equal(t, model, m.ID)
		_, err = r.alice.Models.Get(r.ctx, "openai/missing")
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.alice.Batches.Get(r.ctx, "batch_1")
		e = requireStatus(t, err, http.StatusNotFound)
		require.Equal(t, "not_found", e.Code)
		e = requireStatus(t, r.alice.Delete(r.ctx, "models", nil, nil), http.StatusMethodNotAllowed)
		require.Equal(t, "method_not_allowed", e.Code)
		stranger := client(t, r.url, "chatd_wrong")
		_, err = stranger.Models.List(r.ctx)
		e = requireStatus(t, err, http.StatusUnauthorized)
		require.Equal(t, "invalid_api_key", e.Code)
	})
}

func TestStreamingResponse(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		r.llm.Enqueue(llmtest.Join(llmtest.Reasoning("Thinking", " hard."), llmtest.TextChunks("Stre", "amed ", "answer ✓.")))
		var got collected
		got.read(t, r.alice.Responses.NewStreaming(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Go")}), nil)
		requireIncreasing(t, got.seqs)
		require.Equal(t, "response.created", got.types[0])
		require.Equal(t, "response.completed", got.types[len(got.types)-1])
		require.NotNil(t, got.final)
		require.Equal(t, "Streamed answer ✓.", got.text.String())
		require.Equal(t, got.text.String(), got.final.OutputText())
		require.Equal(t, "reasoning", got.final.Output[0].Type)

		// The whole stream replays from any point after it ended, with the
		// same numbers: the deltas past the point, and nothing before it.
		for _, after := range []int64{0, 5, got.seqs[len(got.seqs)/2], got.last() - 1} {
			var again collected
			again.read(t, r.alice.Responses.GetStreaming(r.ctx, got.final.ID, responses.ResponseGetParams{StartingAfter: openai.Int(after)}), nil)
			requireIncreasing(t, again.seqs)
			require.Greater(t, again.seqs[0], after)
			require.Equal(t, got.last(), again.last())
		}
		var whole collected
		whole.read(t, r.alice.Responses.GetStreaming(r.ctx, got.final.ID, responses.ResponseGetParams{}), nil)
		// Deltas may be cut differently (a replay sends each text whole);
		// every other event keeps its number.
		require.Equal(t, got.fixed(), whole.fixed())
		require.Equal(t, got.text.String(), whole.text.String())
	})
}

func TestConversationItems(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		conv, err := r.alice.Conversations.New(r.ctx, conversations.ConversationNewParams{Metadata: shared.Metadata{"project": "x"}})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"project": "x"}, conv.Metadata)
		in := responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
		r.llm.Enqueue(llmtest.TextChunks("First answer."), llmtest.TextChunks("Second answer."))
		for _, prompt := range []string{"First", "Second"} {
			_, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text(prompt), Conversation: in})
			require.NoError(t, err)
		}
		page, err := r.alice.Conversations.Items.List(r.ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
		require.NoError(t, err)
		var transcript []string
		for _, it := range page.Data {
			require.Equal(t, "message", it.Type)
			m := it.AsMessage()
			transcript = append(transcript, string(m.Role)+": "+m.Content[0].Text)
		}
		require.Equal(t, []string{"user: First", "assistant: First answer.", "user: Second", "assistant: Second answer."}, transcript)
		item, err := r.alice.Conversations.Items.Get(r.ctx, conv.ID, page.Data[1].ID, conversations.ItemGetParams{})
		require.NoError(t, err)
		require.Equal(t, "First answer.", item.AsMessage().Content[0].Text)

		updated, err := r.alice.Conversations.Update(r.ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"project": "y"}})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"project": "y"}, updated.Metadata)

		// Another user sees neither the conversation nor its responses.
		_, err = r.bob.Conversations.Get(r.ctx, conv.ID)
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.bob.Conversations.Items.List(r.ctx, conv.ID, conversations.ItemListParams{})
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.bob.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("mine?"), Conversation: in})
		requireStatus(t, err, http.StatusNotFound)

		deleted, err := r.alice.Conversations.Delete(r.ctx, conv.ID)
		require.NoError(t, err)
		require.True(t, deleted.Deleted)
		_, err = r.alice.Conversations.Get(r.ctx, conv.ID)
		requireStatus(t, err, http.StatusNotFound)
	})
}

func TestOtherUsersResponseIsNotFound(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		resp, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("secret")})
		require.NoError(t, err)
		_, err = r.bob.Responses.Get(r.ctx, resp.ID, responses.ResponseGetParams{})
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.bob.Responses.Cancel(r.ctx, resp.ID)
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.bob.Responses.InputItems.List(r.ctx, resp.ID, responses.InputItemListParams{})
		requireStatus(t, err, http.StatusNotFound)
		_, err = r.bob.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("continue"), PreviousResponseID: openai.String(resp.ID)})
		requireStatus(t, err, http.StatusNotFound)
		require.Error(t, r.bob.Responses.Delete(r.ctx, resp.ID))

		require.NoError(t, r.alice.Responses.Delete(r.ctx, resp.ID))
		_, err = r.alice.Responses.Get(r.ctx, resp.ID, responses.ResponseGetParams{})
		requireStatus(t, err, http.StatusNotFound)
	})
}

func TestFunctionCallRoundTrip(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		r.llm.Enqueue(llmtest.ToolCall("call_1", "get_weather", `{"city":"Paris"}`), llmtest.TextChunks("It is sunny in Paris."))
		tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: "get_weather", Description: openai.String("The weather in a city"),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		}}
		first, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Weather in Paris?"), Tools: []responses.ToolUnionParam{tool}})
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCompleted, first.Status)
		require.Len(t, first.Output, 1)
		call := first.Output[0].AsFunctionCall()
		require.Equal(t, "function_call", string(call.Type))
		require.Equal(t, "call_1", call.CallID)
		require.Equal(t, "get_weather", call.Name)
		require.JSONEq(t, `{"city":"Paris"}`, call.Arguments)

		out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 24°C")
		out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
		second, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{
			Model: model, PreviousResponseID: openai.String(first.ID),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
		})
		require.NoError(t, err)
		require.Equal(t, "It is sunny in Paris.", second.OutputText())
		require.Contains(t, string(r.llm.Requests()[1].Body), "sunny, 24°C", "the output reached the model as the tool result")

		// Delivering the same outputs again answers the same response.
		again, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{
			Model: model, PreviousResponseID: openai.String(first.ID),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
		})
		require.NoError(t, err)
		require.Equal(t, second.ID, again.ID)
		require.Len(t, r.llm.Requests(), 2)

		// The first response stays what it was: the call, now answered.
		got, err := r.alice.Responses.Get(r.ctx, first.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		require.Equal(t, "call_1", got.Output[0].AsFunctionCall().CallID)
		items, err := r.alice.Responses.InputItems.List(r.ctx, second.ID, responses.InputItemListParams{})
		require.NoError(t, err)
		require.Equal(t, "function_call_output", items.Data[0].Type)
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		key := option.WithHeader("Idempotency-Key", "order-42")
		params := responses.ResponseNewParams{Model: model, Input: text("Charge once")}
		first, err := r.alice.Responses.New(r.ctx, params, key)
		require.NoError(t, err)
		again, err := r.alice.Responses.New(r.ctx, params, key)
		require.NoError(t, err)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, first.OutputText(), again.OutputText())
		require.Len(t, r.llm.Requests(), 1, "one turn for one key")

		_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Charge twice")}, key)
		requireStatus(t, err, http.StatusConflict)
		// Another user's same key is their own request.
		other, err := r.bob.Responses.New(r.ctx, params, key)
		require.NoError(t, err)
		require.NotEqual(t, first.ID, other.ID)
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		hang := llmtest.Join(llmtest.TextChunks("Partial ", "answer"), llmtest.Hang())
		r.llm.Enqueue(hang)
		resp, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Long task"), Background: openai.Bool(true)})
		require.NoError(t, err)
		require.True(t, resp.Status == responses.ResponseStatusInProgress || resp.Status == responses.ResponseStatusQueued, resp.Status)
		require.True(t, resp.Background)
		// Follow the stream until the partial text is there.
		var seen collected
		seen.read(t, r.alice.Responses.GetStreaming(r.ctx, resp.ID, responses.ResponseGetParams{}), func(responses.ResponseStreamEventUnion) bool {
			return seen.text.String() == "Partial answer"
		})
		// The chat is busy: a next response is refused, not queued.
		_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Meanwhile"), PreviousResponseID: openai.String(resp.ID)})
		e := requireStatus(t, err, http.StatusConflict)
		require.Equal(t, "conversation_busy", e.Code)
		cancelled, err := r.alice.Responses.Cancel(r.ctx, resp.ID)
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCancelled, cancelled.Status)
		require.Equal(t, "Partial answer", cancelled.OutputText(), "the partial output is kept")
		got, err := r.alice.Responses.Get(r.ctx, resp.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCancelled, got.Status)

		var rest collected
		rest.read(t, r.alice.Responses.GetStreaming(r.ctx, resp.ID, responses.ResponseGetParams{StartingAfter: openai.Int(seen.last())}), nil)
		require.Equal(t, "response.incomplete", rest.types[len(rest.types)-1])
		require.Equal(t, responses.ResponseStatusCancelled, rest.final.Status)
		require.Empty(t, rest.text.String(), "nothing was streamed twice")
	})
}

// TestBackgroundResume: a background response's stream is cut while the
// model streams and resumed with starting_after: the deltas of both
// streams make exactly the response's text.
func TestBackgroundResume(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := setup(t, newStore)
		release := make(chan struct{})
		r.llm.Enqueue(llmtest.Join(llmtest.TextChunks("One ", "two "), llmtest.Pause(release), llmtest.TextChunks("three ", "four.")))
		resp, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Count"), Background: openai.Bool(true)})
		require.NoError(t, err)
		requireResume(t, r.ctx, r.alice, r.alice, resp.ID, release, "One two three four.")
	})
}

// requireResume reads resp's stream through a until "One two " is there,
// cuts it, releases the model and reads the rest through b.
func requireResume(t *testing.T, ctx context.Context, a, b openai.Client, id string, release chan struct{}, want string) {
	t.Helper()
	var got collected
	got.read(t, a.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{}), func(responses.ResponseStreamEventUnion) bool {
		return got.text.String() == "One two "
	})
	close(release)
	got.read(t, b.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: openai.Int(got.last())}), nil)
	requireIncreasing(t, got.seqs)
	require.NotNil(t, got.final)
	require.Equal(t, responses.ResponseStatusCompleted, got.final.Status)
	require.Equal(t, want, got.text.String())
	require.Equal(t, got.final.OutputText(), got.text.String())
	final, err := b.Responses.Get(ctx, id, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, want, final.OutputText())
}

// TestServerSideTool: chatd's own tools run on the server and appear as
// mcp_call output items with their results, before the model's answer.
func TestServerSideTool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	llm := llmtest.NewOpenAI(t, llmtest.ToolCall("call_t", "current_time", `{}`), llmtest.TextChunks("It is late."))
	cfg := testConfig(llm.URL)
	cfg.BuiltinTools = true
	a, url := serve(t, ctx, cfg, dbtest.NewSQLite(t))
	c := client(t, url, token(t, a, "alice"))
	var got collected
	got.read(t, c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: model, Input: text("Time?")}), nil)
	requireIncreasing(t, got.seqs)
	require.NotNil(t, got.final)
	require.Len(t, got.final.Output, 2)
	call := got.final.Output[0].AsMcpCall()
	require.Equal(t, "mcp_call", string(call.Type))
	require.Equal(t, "current_time", call.Name)
	require.NotEmpty(t, call.Output, "the tool's result")
	require.Equal(t, "It is late.", got.final.OutputText())
	require.Contains(t, got.types, "response.mcp_call.completed")
}

func TestPreviousResponseMustBeLatest(t *testing.T) {
	t.Parallel()
	r := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	first, err := r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("One")})
	require.NoError(t, err)
	key := option.WithHeader("Idempotency-Key", "k2")
	params := responses.ResponseNewParams{Model: model, Input: text("Two"), PreviousResponseID: openai.String(first.ID)}
	second, err := r.alice.Responses.New(r.ctx, params, key)
	require.NoError(t, err)
	again, err := r.alice.Responses.New(r.ctx, params, key)
	require.NoError(t, err, "a retry of the request that continued it is not a branch")
	require.Equal(t, second.ID, again.ID)
	_, err = r.alice.Responses.New(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Branch"), PreviousResponseID: openai.String(first.ID)})
	e := requireStatus(t, err, http.StatusBadRequest)
	require.Equal(t, "previous_response_id", e.Param)
	require.Len(t, r.llm.Requests(), 2)
}

// TestFailedResponse: a turn that ends in error is a failed response
// carrying the error, and its stream ends with response.failed.
func TestFailedResponse(t *testing.T) {
	t.Parallel()
	r := setup(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	r.llm.Enqueue(llmtest.HTTPError(http.StatusBadRequest, "the prompt is not acceptable"))
	var got collected
	got.read(t, r.alice.Responses.NewStreaming(r.ctx, responses.ResponseNewParams{Model: model, Input: text("Fail")}), nil)
	require.Equal(t, "response.failed", got.types[len(got.types)-1])
	require.Equal(t, responses.ResponseStatusFailed, got.final.Status)
	require.Contains(t, got.final.Error.Message, "not acceptable")
	resp, err := r.alice.Responses.Get(r.ctx, got.final.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusFailed, resp.Status)
}
