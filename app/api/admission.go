package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// admit evaluates a prompt with the lifecycle hooks (spec: "Lifecycle
// hooks") before anything is written: session_start when session is set,
// then user_prompt_submit. It returns in with the prompt as the consumer
// replaced it and the consumer's context, which enters history with the
// prompt (also when the prompt is queued: it is evaluated once, here). A
// durable request that was already claimed is not evaluated again: its
// answer is the claim's (replay or conflict), so admit returns in as is.
// A denial is 403 PROMPT_DENIED; a consumer that is down or answers
// garbage is 503 HOOK_UNAVAILABLE or 502 HOOK_INVALID_RESPONSE naming the
// hook (fail closed).
func (s *Server) admit(ctx context.Context, c *caller, chatID uuid.UUID, requestID uuid.NullUUID, session string, in chatstate.UserInput) (chatstate.UserInput, error) {
	if !s.deps.Hooks.Enabled() {
		return in, nil
	}
	if requestID.Valid {
		claimed, err := s.claimed(ctx, requestID.UUID)
		if err != nil || claimed {
			return in, err
		}
	}
	sub := hooks.Submission{ChatID: chatID, OwnerID: c.user.ID, Session: session}
	if requestID.Valid {
		sub.ID = requestID.UUID.String()
	}
	out, err := s.deps.Hooks.Admit(ctx, hooks.Admission, sub, in)
	if err != nil {
		return in, hookError(ctx, err)
	}
	if len(in.Content) > 0 {
		// A replacement must be a prompt this API would accept.
		parts, err := s.inputParts(out.Content, false)
		if err != nil {
			return in, newError(http.StatusBadGateway, sdk.CodeHookInvalidResponse,
				"The lifecycle hook user_prompt_submit got an invalid response from its consumer; the prompt was not admitted.",
				"lifecycle hook user_prompt_submit: invalid response: updated_prompt is not a valid prompt: "+err.Error())
		}
		out.Content = parts
	}
	return out, nil
}

// admitToChat is admit for a prompt to an existing chat: a chat the
// caller may not see is 404 before any hook is asked.
func (s *Server) admitToChat(r *http.Request, c *caller, chatID uuid.UUID, requestID uuid.NullUUID, session string, in chatstate.UserInput) (chatstate.UserInput, error) {
	if !s.deps.Hooks.Enabled() {
		return in, nil
	}
	err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		_, err := s.readChat(r.Context(), c, tx, chatID)
		return err
	})
	if err != nil {
		return in, err
	}
	return s.admit(r.Context(), c, chatID, requestID, session, in)
}

// claimed reports whether a durable request id already has a claim.
func (s *Server) claimed(ctx context.Context, requestID uuid.UUID) (bool, error) {
	var found bool
	err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		_, err := tx.InvocationGet(ctx, requestID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	return found, err
}

// hookError answers a failed admission dispatch; the message names the
// hook, the detail is the dispatch error.
func hookError(ctx context.Context, err error) error {
	var (
		denied *hooks.DeniedError
		failed *hooks.Error
	)
	event := hooks.UserPromptSubmit
	if errors.As(err, &failed) {
		event = failed.Event
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err() // the client went away
	case errors.As(err, &denied):
		msg := fmt.Sprintf("The lifecycle hook %s denied the prompt", denied.Event)
		if denied.Reason != "" {
			msg += ": " + denied.Reason
		}
		return newError(http.StatusForbidden, sdk.CodePromptDenied, msg+". Nothing was saved.", err.Error())
	case errors.Is(err, hooks.ErrInvalidResponse):
		return newError(http.StatusBadGateway, sdk.CodeHookInvalidResponse,
			fmt.Sprintf("The lifecycle hook %s got an invalid response from its consumer; the prompt was not admitted.", event), err.Error())
	default:
		return newError(http.StatusServiceUnavailable, sdk.CodeHookUnavailable,
			fmt.Sprintf("The lifecycle hook %s could not reach its consumer; the prompt was not admitted. Retry once it is back.", event), err.Error())
	}
}
