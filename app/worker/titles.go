package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// GenerateTitle queues a background title generation for a chat that got
// a fallback title. It never blocks the caller; when the queue is full the
// chat keeps its fallback title.
func (w *Worker) GenerateTitle(chatID uuid.UUID) {
	select {
	case w.titles <- chatID:
	default:
		w.log.Warn("title queue full; keeping the fallback title", "chat_id", chatID)
	}
}

func (w *Worker) titleLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-w.titles:
			if err := w.generateTitle(ctx, id); err != nil && ctx.Err() == nil {
				w.log.Info("title generation failed; keeping the fallback title", "chat_id", id, "err", err)
			}
		}
	}
}

// generateTitle asks the chat's model for a title and writes it as a
// generated title, which never overrides a user title. Retryable provider
// errors are retried with the generation retry limit.
func (w *Worker) generateTitle(ctx context.Context, chatID uuid.UUID) error {
	var (
		chat  store.Chat
		first string
	)
	err := w.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if chat, err = tx.ChatGet(ctx, chatID); err != nil {
			return err
		}
		ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{Limit: 20})
		// The first prompt a person wrote; lifecycle hook context before it
		// is authorless (else the first user message people see).
		var fallback string
		for _, m := range ms {
			if m.Role != store.RoleUser || m.Visibility == store.VisibilityModel {
				continue
			}
			var parts []sdk.ChatMessagePart
			_ = json.Unmarshal(m.Content, &parts)
			var text string
			for _, p := range parts {
				if p.Type == sdk.PartText {
					text += p.Text
				}
			}
			if m.CreatedBy.Valid {
				first = text
				break
			}
			if fallback == "" {
				fallback = text
			}
		}
		if first == "" {
			first = fallback
		}
		return err
	})
	if err != nil || chat.TitleSource != store.TitleSourceFallback || first == "" {
		return err
	}
	model, err := w.deps.Models.Resolve(chat.LastModelConfigID)
	if err != nil {
		return err
	}
	if len(first) > 4000 {
		first = first[:4000]
	}
	req := llm.Request{Model: model.Name, MaxOutputTokens: 32, Messages: []llm.Message{
		{Role: llm.RoleSystem, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: llm.TitleInstruction}}},
		{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: first}}},
	}}
	var resp llm.Response
	// Titles are detached from the turn: background scope, no model labels.
	kind := chatKind(chat)
	// Its spans are their own trace roots.
	chatAttr := attribute.String("chat_id", chat.ID.String())
	bg := trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	bg = withStageIdentity(bg, stageIdentity{rec: w.rec, scope: ScopeBackground, kind: kind, chat: chatAttr})
	for attempt := int64(1); ; attempt++ {
		sctx, st := w.rec.start(bg, StageStream, ScopeBackground, kind, time.Time{}, chatAttr)
		// The span carries its model like a turn's; the metrics keep the
		// background scope without model labels.
		st.set(identityOf(model, "").attrs()...)
		gctx, call := w.genai.call(sctx, model.Provider.Name(), req, w.clock.Now(),
			attribute.String("scope", ScopeBackground), attribute.String("chat_kind", kind), chatAttr)
		resp, err = model.Provider.Stream(sctx, req, nil)
		call.end(gctx, resp, err, w.clock.Now())
		st.end(err)
		var perr *llm.Error
		if err == nil || !errors.As(llm.Classify(model.Provider.Name(), err), &perr) || !perr.Retryable ||
			attempt > int64(w.cfg.MaxRetries) {
			break
		}
		if err := sleep(ctx, w.clock, w.backoff(attempt)); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	// The call is paid for whether or not its answer is a title; a reply
	// that is not one (tool-call markup, JSON, an empty answer) leaves the
	// prompt-derived title in place.
	title := cleanTitle(resp.Parts)
	ch := charge(model, store.UsageKindTitle, resp.Usage)
	return w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		if err := t.RecordTitleUsage(chatID, uuid.New(), *ch); err != nil {
			return err
		}
		if title == "" {
			return nil
		}
		_, err := t.WriteTitle(chatID, title, store.TitleSourceGenerated)
		return err
	})
}

// cleanTitle takes the first line of the answer without quotes or
// markdown; "" when the answer is not a plain-text title: it calls a tool,
// or its text is markup (a model that answers with tool-call tags, JSON or
// code instead of a title), so the chat keeps its prompt-derived title.
func cleanTitle(parts []sdk.ChatMessagePart) string {
	var text string
	for _, p := range parts {
		switch p.Type {
		case sdk.PartText:
			text += p.Text
		case sdk.PartToolCall:
			return ""
		}
	}
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if strings.HasPrefix(text, "```") {
		return "" // a code block, not a title
	}
	text = strings.NewReplacer("**", "", "__", "").Replace(text)
	text = strings.Trim(text, " \t\"'`*#>.")
	if len(text) >= 6 && strings.EqualFold(text[:6], "title:") {
		text = strings.Trim(text[6:], " \t\"'`*#>.")
	}
	if text == "" || strings.ContainsAny(text, "<>{}[]`|\\") {
		return ""
	}
	return chatstate.FallbackTitle(text, 80)
}
