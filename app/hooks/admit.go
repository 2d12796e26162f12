package hooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Session sources of session_start.
const (
	SessionCreate = "create" // a chat is created
	SessionEdit   = "edit"   // an edit replaces a chat's history from a message on
)

// ErrDenied: the consumer denied the prompt (user_prompt_submit); a
// *DeniedError wraps it.
var ErrDenied = errors.New("denied")

// DeniedError is a prompt the consumer denied, with its reason.
type DeniedError struct {
	Event  Event
	Reason string
}

func (e *DeniedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("lifecycle hook %s denied the prompt", e.Event)
	}
	return fmt.Sprintf("lifecycle hook %s denied the prompt: %s", e.Event, e.Reason)
}

// Unwrap returns ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// Submission is a prompt being admitted into a chat: its chat (already
// given its id when it is being created) and owner.
type Submission struct {
	ChatID  uuid.UUID
	OwnerID uuid.UUID
	// ID names the submission in the event ids (Request.SubmissionID): a
	// durable request's request_id; empty: a fresh id.
	ID string
	// Session, when set, dispatches session_start first, with this source
	// (SessionCreate or SessionEdit).
	Session string
}

// Admit evaluates a prompt once, when its submission is accepted (spec:
// "Prompt submission is evaluated once when the submission is accepted,
// including queued messages and subagent prompts"): session_start first
// when s.Session is set, then user_prompt_submit with in.Content (none
// when in.Content is empty: a chat created without a prompt). It returns
// in with the prompt as the consumer replaced it and the context the
// consumer returned in in.Context (session_start's, then
// user_prompt_submit's; each model-only, then for everyone), which
// chatstate writes into history just before the prompt. Write nothing on
// an error: a *DeniedError (errors.Is ErrDenied) is a denied prompt, an
// *Error a failed dispatch naming the hook (fail closed). class says
// whether the prompt admits new work (a person's prompt) or belongs to
// work already admitted (a subagent prompt from a running turn). A nil
// Dispatcher returns in unchanged.
func (d *Dispatcher) Admit(ctx context.Context, class Class, s Submission, in chatstate.UserInput) (chatstate.UserInput, error) {
	if d == nil {
		return in, nil
	}
	if s.ID == "" {
		s.ID = uuid.NewString()
	}
	base := Request{ChatID: s.ChatID, OwnerID: s.OwnerID, SubmissionID: s.ID}
	var ctxs []chatstate.HookContext
	if s.Session != "" {
		req := base
		req.Event, req.Source = SessionStart, s.Session
		resp, err := d.Dispatch(ctx, class, req)
		if err != nil {
			return in, err
		}
		ctxs = appendContext(ctxs, resp)
	}
	if len(in.Content) > 0 {
		req := base
		req.Event, req.Prompt = UserPromptSubmit, in.Content
		resp, err := d.Dispatch(ctx, class, req)
		if err != nil {
			return in, err
		}
		if resp.Denied() {
			return in, &DeniedError{Event: UserPromptSubmit, Reason: resp.Reason}
		}
		if resp.UpdatedPrompt != nil {
			prompt, err := replacePrompt(in.Content, *resp.UpdatedPrompt)
			if err != nil {
				return in, &Error{Event: UserPromptSubmit, Err: err}
			}
			in.Content = prompt
		}
		ctxs = appendContext(ctxs, resp)
	}
	in.Context = append(append([]chatstate.HookContext(nil), in.Context...), ctxs...)
	return in, nil
}

func appendContext(cs []chatstate.HookContext, resp Response) []chatstate.HookContext {
	if resp.ModelContext != "" {
		cs = append(cs, chatstate.HookContext{Text: resp.ModelContext, Visibility: store.VisibilityModel})
	}
	if resp.UserContext != "" {
		cs = append(cs, chatstate.HookContext{Text: resp.UserContext, Visibility: store.VisibilityBoth})
	}
	return cs
}

// replacePrompt replaces the prompt's text with text: one text part first
// (none when text is empty), then the parts that are not text (files) as
// they were. A replacement that leaves nothing is an invalid response.
func replacePrompt(parts []sdk.ChatMessagePart, text string) ([]sdk.ChatMessagePart, error) {
	var out []sdk.ChatMessagePart
	if text != "" {
		out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: text})
	}
	for _, p := range parts {
		if p.Type != sdk.PartText {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: updated_prompt leaves the prompt empty", ErrInvalidResponse)
	}
	return out, nil
}
