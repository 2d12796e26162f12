package chatstate

import (
	"errors"
	"fmt"

	"github.com/chatd/chatd/store"
)

// Conditions callers map to API errors with errors.Is.
var (
	// ErrTransitionNotAllowed: the diagram does not allow the transition.
	ErrTransitionNotAllowed = errors.New("transition not allowed")
	// ErrInvalidState: the chat is in an invalid state; reconcile it first.
	ErrInvalidState = errors.New("chat is in an invalid state")
	// ErrChatArchived: the chat (or its family root) is archived.
	ErrChatArchived = errors.New("chat is archived")
	// ErrNotFound: the chat, message or queued message does not exist.
	ErrNotFound = store.ErrNotFound
	// ErrNothingToCompact: no uncompressed assistant message after the latest boundary.
	ErrNothingToCompact = errors.New("nothing to compact")
	// ErrNothingToClear: no model-visible message after the latest boundary.
	ErrNothingToClear = errors.New("nothing to clear")
	// ErrQueueFull: the chat's queue is at its limit.
	ErrQueueFull = errors.New("queue is full")
	// ErrToolCallAwaitingApproval: a client result was submitted while the
	// chat waits on a person's approval of a tool call.
	ErrToolCallAwaitingApproval = errors.New("tool call is awaiting approval")
	// ErrNotAwaitingApproval: an approval answer names a call that is not
	// awaiting approval.
	ErrNotAwaitingApproval = errors.New("tool call is not awaiting approval")
	// ErrElicitationAnswered: an elicitation response names a question
	// that is no longer pending.
	ErrElicitationAnswered = errors.New("elicitation is not pending")
	// ErrValidation: the input is malformed; see ValidationError.
	ErrValidation = errors.New("invalid input")
)

// TransitionError is a rejected transition. It unwraps to
// ErrTransitionNotAllowed, and also to ErrNotFound (from N), ErrInvalidState
// (from Invalid) or ErrChatArchived (from an archived state) so callers can
// answer precisely.
type TransitionError struct {
	Transition Transition
	From       State
	Reason     string
	// Cause overrides what From implies (e.g. Create under an archived root).
	Cause error
}

func (e *TransitionError) Error() string {
	msg := fmt.Sprintf("%s not allowed from %s", e.Transition, e.From)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns the conditions the rejection implies.
func (e *TransitionError) Unwrap() []error {
	errs := []error{ErrTransitionNotAllowed}
	switch {
	case e.Cause != nil:
		errs = append(errs, e.Cause)
	case e.From == StateN:
		errs = append(errs, ErrNotFound)
	case e.From == StateInvalid:
		errs = append(errs, ErrInvalidState)
	case e.From.Archived() && e.Transition != SetArchivedFalse:
		// Unarchiving is the one thing an archived chat allows; its refusal
		// (the parent is archived) is a plain transition conflict.
		errs = append(errs, ErrChatArchived)
	}
	return errs
}

// ValidationError is bad input for a transition, naming the field.
type ValidationError struct {
	Field  string
	Detail string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Detail }

// Unwrap returns ErrValidation.
func (e *ValidationError) Unwrap() error { return ErrValidation }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// notFoundError names what was not found; it unwraps to ErrNotFound.
type notFoundError struct{ what string }

func (e *notFoundError) Error() string { return e.what + " not found" }

// Unwrap returns ErrNotFound.
func (e *notFoundError) Unwrap() error { return ErrNotFound }
