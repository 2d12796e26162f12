package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/redact"
	"github.com/chatd/chatd/app/sdk"
)

// Every spelling of a secret an error text may hold is masked: as it is,
// JSON-escaped, URL-escaped, and the credential of a "Bearer <token>"
// header value; a longer secret that contains a shorter one is masked
// whole; values too short to be secrets are left alone; a forgotten
// owner's values are no longer masked.
func TestText(t *testing.T) {
	s := redact.New()
	s.Set("provider:a", redact.LabelAPIKey, "sk-live-0123456789")
	s.Set("mcp:b", redact.LabelSecret, `pa"ss/word+1`, "Bearer tok-abcdef", "true", "")
	s.Set("mcp:c", redact.LabelSecret, "sk-live-0123456789-extended")

	for _, sc := range []struct{ in, want string }{
		{"401: bad key sk-live-0123456789.", "401: bad key [api key]."},
		{"key=sk-live-0123456789-extended", "key=[secret]"},
		{`{"header":"pa\"ss/word+1"}`, `{"header":"[secret]"}`},
		{"q=pa%22ss%2Fword%2B1", "q=[secret]"},
		{"Authorization: Bearer tok-abcdef", "Authorization: [secret]"},
		{"token tok-abcdef was refused", "token [secret] was refused"},
		{"ok is true", "ok is true"},
	} {
		require.Equal(t, sc.want, s.Text(sc.in), "%q", sc.in)
	}

	s.Set("provider:a", redact.LabelAPIKey)
	require.Equal(t, "sk-live-0123456789", s.Text("sk-live-0123456789"))
	s.Add("provider:a", redact.LabelAPIKey, "sk-old-0000000000")
	s.Add("provider:a", redact.LabelAPIKey, "sk-new-1111111111")
	require.Equal(t, "[api key] [api key]", s.Text("sk-old-0000000000 sk-new-1111111111"), "Add keeps the earlier values")

	var none *redact.Secrets
	require.Equal(t, "sk-live-0123456789", none.Text("sk-live-0123456789"), "a nil set masks nothing")
}

// Error masks the text and keeps what callers decide on: the kind, status
// and retryability of an *llm.Error (found by errors.As also when it is
// wrapped) and errors.Is for the chain; nothing unwraps to the clear text.
func TestError(t *testing.T) {
	const key = "sk-proj-REDACTME-42"
	s := redact.New()
	s.Set("provider:x", redact.LabelAPIKey, key)

	plain := errors.New("no secret here")
	require.Same(t, plain, s.Error(plain), "an error without secrets is returned as it is")
	require.NoError(t, s.Error(nil))

	cause := fmt.Errorf("dial with %s: %w", key, context.DeadlineExceeded)
	pe := &llm.Error{Kind: sdk.ChatErrorAuth, StatusCode: 401, Provider: "gw", Message: "bad key " + key, Err: cause}
	for _, in := range []error{pe, fmt.Errorf("list models of gw: %w", pe)} {
		out := s.Error(in)
		require.NotContains(t, out.Error(), key)
		require.Contains(t, out.Error(), redact.LabelAPIKey)
		var got *llm.Error
		require.ErrorAs(t, out, &got)
		require.Equal(t, sdk.ChatErrorAuth, got.Kind)
		require.Equal(t, 401, got.StatusCode)
		require.Equal(t, "bad key [api key]", got.Message)
		require.Equal(t, sdk.ChatError{Message: "bad key [api key]", Kind: sdk.ChatErrorAuth, Provider: "gw", StatusCode: 401}, got.ChatError())
		require.ErrorIs(t, out, context.DeadlineExceeded, "errors.Is sees the chain")
		for e := error(got); e != nil; e = errors.Unwrap(e) {
			require.NotContains(t, e.Error(), key, "no link of the chain holds the key")
		}
	}

	other := s.Error(fmt.Errorf("mcp said %s: %w", key, context.Canceled))
	require.Equal(t, "mcp said [api key]: context canceled", other.Error())
	require.ErrorIs(t, other, context.Canceled)
	require.Nil(t, errors.Unwrap(other))
}

// JSON masks inside a document and keeps it valid JSON.
func TestJSON(t *testing.T) {
	s := redact.New()
	s.Set("mcp:x", redact.LabelSecret, `ab"cdefg`)
	out := s.JSON(json.RawMessage(`{"content":[{"type":"text","text":"env ab\"cdefg"}]}`))
	require.JSONEq(t, `{"content":[{"type":"text","text":"env [secret]"}]}`, string(out))
	same := json.RawMessage(`"nothing"`)
	require.Equal(t, same, s.JSON(same))
}

// The log handler masks messages, string attributes, errors, groups and
// attributes added with With.
func TestHandler(t *testing.T) {
	const key = "sk-log-0123456789"
	s := redact.New()
	s.Set("p", redact.LabelAPIKey, key)
	var buf bytes.Buffer
	log := slog.New(s.Handler(slog.NewJSONHandler(&buf, nil))).With("ctx", "with "+key)
	log.Info("message "+key, "err", errors.New("failed: "+key), "n", 3,
		slog.Group("g", slog.String("inner", key)), "any", []string{key})
	out := buf.String()
	require.NotContains(t, out, key)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	require.Equal(t, "message [api key]", rec["msg"])
	require.Equal(t, "with [api key]", rec["ctx"])
	require.Equal(t, "failed: [api key]", rec["err"])
	require.EqualValues(t, 3, rec["n"])
	require.Equal(t, map[string]any{"inner": "[api key]"}, rec["g"])
	require.Equal(t, "[[api key]]", rec["any"])
}

// A provider client wrapped by Provider: an upstream that quotes the
// request's headers in its error (a 401 from a gateway) gives an error
// without the key, on a chat call and on a model listing, of the same
// kind; the key did reach the upstream.
func TestProviderMasksEchoedKey(t *testing.T) {
	const key = "sk-echoed-9f8e7d6c5b4a"
	s := redact.New()
	s.Set("provider:gw", redact.LabelAPIKey, key)
	fake := llmtest.NewOpenAI(t, llmtest.EchoHeaders(http.StatusUnauthorized, "invalid credentials"))
	fake.FailModels(llmtest.EchoHeaders(http.StatusUnauthorized, "invalid credentials"))
	p := redact.Provider(openai.New(openai.Config{Name: "gw", APIKey: key, BaseURL: fake.URL, UseResponsesAPI: new(false)}), s)

	_, err := p.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "hi"}}}}}, nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
	require.Contains(t, err.Error(), "Authorization: Bearer [api key]", "the upstream did quote the key")
	var pe *llm.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, sdk.ChatErrorAuth, pe.Kind)

	lister, ok := p.(llm.ModelLister)
	require.True(t, ok)
	_, err = lister.ListModels(t.Context())
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
	require.Contains(t, err.Error(), "[api key]")
	require.Equal(t, "Bearer "+key, fake.Requests()[0].Header.Get("Authorization"))
}
