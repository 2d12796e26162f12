// Package aisdk speaks the Vercel AI SDK's UI message stream (npm `ai`,
// `useChat`, `AbstractChat` with `DefaultChatTransport`), so an unchanged
// AI SDK frontend uses chatd as its durable backend, resume included
// (API.md, "AI SDK UI message stream").
//
// It is a translator (DESIGN.md rule 9), no second chat system: every
// write goes through the native API's own handlers in process
// (app/loopback: sends with durable request ids, edits, tool results, tool
// approvals, chat creation), and every stream is the chat stream's own
// loop (stream.Server.Watch: stored messages, the part buffer, the relay
// to the replica that runs the chat) rendered as UI message chunks
// (render.go). Reads of history go through a read-only store view.
//
// Routes (under /api/v2): POST /ai-sdk/chat, GET /ai-sdk/chat/{id}/stream,
// GET /ai-sdk/chat/{id}/messages, POST /ai-sdk/chat/{id}/interrupt.
package aisdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// DefaultMaxBodyBytes caps a POST's body: the default transport sends the
// whole history with every message.
const DefaultMaxBodyBytes = 8 << 20

// Routes is where the handlers are registered (api.Server).
type Routes interface {
	// Handle registers a plain route.
	Handle(pattern string, h http.Handler)
	// HandleUserStreamMethod registers a long-lived per-user route: the
	// caller is authenticated and holds a stream slot while h runs, which
	// ends when the credential is revoked.
	HandleUserStreamMethod(method, path string, h func(w http.ResponseWriter, r *http.Request, userID uuid.UUID))
}

// Watcher runs a chat's stream loop (stream.Server).
type Watcher interface {
	Watch(ctx context.Context, chatID uuid.UUID, fn func(ctx context.Context, events []sdk.ChatStreamEvent) error) error
}

// Deps are the surface's collaborators.
type Deps struct {
	// API is the native API's handler; writes go through it (loopback).
	API   http.Handler
	Store store.ReadStore
	// Streams builds the streams.
	Streams Watcher
	Clock   clock.Clock
	Log     *slog.Logger
	// MaxBodyBytes caps a POST body (DefaultMaxBodyBytes when zero).
	MaxBodyBytes int64
}

// Handler serves the AI SDK routes.
type Handler struct{ deps Deps }

// New returns the handler; Register adds its routes.
func New(deps Deps) *Handler {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.MaxBodyBytes == 0 {
		deps.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return &Handler{deps: deps}
}

// Register adds the routes under /api/v2.
func (h *Handler) Register(r Routes) {
	r.HandleUserStreamMethod(http.MethodPost, "/ai-sdk/chat", h.post)
	r.HandleUserStreamMethod(http.MethodGet, "/ai-sdk/chat/{id}/stream", h.resume)
	r.Handle("GET /api/v2/ai-sdk/chat/{id}/messages", http.HandlerFunc(h.messages))
	r.Handle("POST /api/v2/ai-sdk/chat/{id}/interrupt", http.HandlerFunc(h.interrupt))
}

// clientIDPattern is what a client chat id may be (useChat makes 16
// characters of [0-9A-Za-z]).
var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// namespace derives chatd ids from the SDK's ids (UUIDv5).
var namespace = uuid.MustParse("4f1d0e55-7c0a-4a39-9c52-2b7f0a8e51d3")

// chatRequestID is the durable request id that creates the chatd chat of
// a user's client chat id; gen counts the chats that id had and that were
// deleted since.
func chatRequestID(user uuid.UUID, clientID string, gen int) uuid.UUID {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "chat\x00%s\x00%s\x00%d", user, clientID, gen))
}

// MessageRequestID is the durable request id of a user message sent
// through the AI SDK: derived from the chat and the UIMessage id, so a
// retried POST of the same message is the same request.
func MessageRequestID(chatID uuid.UUID, messageID string) uuid.UUID {
	return uuid.NewSHA1(chatID, []byte("ai-sdk-message\x00"+messageID))
}

// maxGenerations bounds how many deleted chats one client id may have had.
const maxGenerations = 64

// resolveChat finds the chatd chat of a client chat id for the caller: a
// chat UUID the caller may see is itself; any other id is the chat its
// durable create request made (created now when create is set). It
// returns uuid.Nil when there is none and create is not set.
func (h *Handler) resolveChat(ctx context.Context, c *sdk.Client, user uuid.UUID, clientID string, create *sdk.CreateChatRequest) (uuid.UUID, error) {
	if !clientIDPattern.MatchString(clientID) {
		return uuid.Nil, validation("id", "the chat id must be 1-128 characters of A-Z, a-z, 0-9, '_' and '-'")
	}
	if id, err := uuid.Parse(clientID); err == nil {
		if _, err := c.Chat(ctx, id); err == nil {
			return id, nil
		} else if !isCode(err, sdk.CodeNotFound) {
			return uuid.Nil, err
		}
	}
	for gen := 0; gen < maxGenerations; gen++ {
		rid := chatRequestID(user, clientID, gen)
		id, made, err := h.madeChat(ctx, user, rid)
		switch {
		case err != nil:
			return uuid.Nil, err
		case made == chatLive:
			return id, nil
		case made == chatDeleted:
			continue // the id's next chat
		case made == chatNone && create == nil:
			return uuid.Nil, nil
		}
		// Not read plainly from the store (nothing admitted yet, or an
		// answer only the API's lookup explains): the API decides.
		id, err = h.chatOf(ctx, c, rid, clientID, create)
		if err != nil || id == uuid.Nil {
			return id, err
		}
		if _, err := c.Chat(ctx, id); err == nil {
			return id, nil
		} else if !isCode(err, sdk.CodeNotFound) {
			return uuid.Nil, err
		}
		// That chat was deleted: the id's next chat.
	}
	return uuid.Nil, validation("id", "this chat id was used for too many deleted chats; use a new one")
}

// What the store says of a client chat id's create request.
type made int

const (
	chatUnclear made = iota // left to the API's lookup
	chatNone                // nothing admitted under the request id
	chatLive                // the chat it made, which the caller owns
	chatDeleted             // the chat it made was deleted since
)

// madeChat reads the chat the caller's create request rid made, in one
// read transaction instead of the API's lookup and chat reads (a resume
// or a send resolves its chat this way on every request). What it cannot
// answer plainly (a request of another caller or without a chat, a chat
// the caller does not own) is chatUnclear.
func (h *Handler) madeChat(ctx context.Context, user, rid uuid.UUID) (uuid.UUID, made, error) {
	var (
		id   uuid.UUID
		what = chatUnclear
	)
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		inv, err := tx.InvocationGet(ctx, rid)
		if errors.Is(err, store.ErrNotFound) {
			what = chatNone
			return nil
		}
		if err != nil || inv.CallerID != user || inv.ChatID == uuid.Nil {
			return err
		}
		chat, err := tx.ChatGet(ctx, inv.ChatID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			id, what = inv.ChatID, chatDeleted
			return nil
		case err != nil:
			return err
		case chat.OwnerID == user:
			id, what = chat.ID, chatLive
		}
		return nil
	})
	return id, what, err
}

// chatOf returns the chat a create request made, making it when create is
// set and nothing was admitted under rid.
func (h *Handler) chatOf(ctx context.Context, c *sdk.Client, rid uuid.UUID, clientID string, create *sdk.CreateChatRequest) (uuid.UUID, error) {
	for attempt := 0; attempt < 3; attempt++ {
		res, err := c.LookupRequest(ctx, rid, sdk.LookupOptions{})
		if err == nil {
			var chat sdk.CreateChatResponse
			if err := json.Unmarshal(res.Body, &chat); err != nil {
				return uuid.Nil, fmt.Errorf("decode the chat of request %s: %w", rid, err)
			}
			return chat.ID, nil
		}
		var e *sdk.Error
		switch {
		case errors.As(err, &e) && e.Code == sdk.CodeInvocationInProgress && e.ChatID != nil:
			return *e.ChatID, nil
		case !isCode(err, sdk.CodeInvocationNotFound):
			return uuid.Nil, err
		case create == nil:
			return uuid.Nil, nil
		}
		req := *create
		req.RequestID = &rid
		req.Content = []sdk.ChatMessagePart{}
		req.Labels = map[string]string{"ai_sdk_chat_id": clientID}
		var out sdk.CreateChatResponse
		err = c.Do(ctx, http.MethodPost, "/chats", req, &out)
		if err == nil {
			return out.ID, nil
		}
		if !isCode(err, sdk.CodeInvocationConflict) && !isCode(err, sdk.CodeInvocationInProgress) {
			return uuid.Nil, err
		}
		// A concurrent first POST created it: look again.
	}
	return uuid.Nil, errors.New("could not resolve the chat id")
}

// clientTools are the names of the chat's client-side (dynamic) tools.
func (h *Handler) clientTools(ctx context.Context, chatID uuid.UUID) (map[string]bool, error) {
	var names map[string]bool
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		chat, err := tx.ChatGet(ctx, chatID)
		if err != nil {
			return err
		}
		names, err = toolNames(chat)
		return err
	})
	return names, err
}

// toolNames are the names of chat's client-side (dynamic) tools.
func toolNames(chat store.Chat) (map[string]bool, error) {
	names := map[string]bool{}
	if len(chat.DynamicTools) == 0 {
		return names, nil
	}
	var tools []sdk.DynamicTool
	if err := json.Unmarshal(chat.DynamicTools, &tools); err != nil {
		return nil, fmt.Errorf("decode dynamic tools: %w", err)
	}
	for _, t := range tools {
		names[t.Name] = true
	}
	return names, nil
}

// interrupted reports whether a request's turn has ended by an
// interruption, by its durable outcome (false when it cannot be read).
func (h *Handler) interrupted(ctx context.Context, requestID uuid.UUID) bool {
	var outcome chatstate.Outcome
	err := h.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		inv, err := tx.InvocationGet(ctx, requestID)
		if err != nil || len(inv.Outcome) == 0 {
			return err
		}
		return json.Unmarshal(inv.Outcome, &outcome)
	})
	return err == nil && outcome.Status == chatstate.OutcomeInterrupted
}

// errFinished ends a watch whose turn is over.
var errFinished = errors.New("turn finished")

// stream answers the UI message stream of one turn; tools are the chat's
// client-side tools (clientTools).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, chatID uuid.UUID, t Target, tools map[string]bool) {
	out := startSSE(w, h.deps.Clock.Now)
	rd := newRenderer(chatID, t, tools, out.chunk)
	rd.interrupted = func(requestID uuid.UUID) bool { return h.interrupted(r.Context(), requestID) }
	err := h.deps.Streams.Watch(r.Context(), chatID, func(ctx context.Context, events []sdk.ChatStreamEvent) error {
		if events == nil {
			out.ping()
			return out.err
		}
		if err := rd.apply(events); err != nil {
			return err
		}
		out.flush()
		if out.err != nil {
			return out.err
		}
		if rd.done() {
			return errFinished
		}
		return nil
	})
	switch {
	case errors.Is(err, errFinished):
	case r.Context().Err() != nil || out.err != nil:
		return // the client left; the turn goes on and can be resumed
	case errors.Is(err, store.ErrNotFound):
		out.chunk(Chunk{Type: ChunkError, ErrorText: "the chat was deleted"})
	case errors.Is(err, stream.ErrClosed):
		out.chunk(Chunk{Type: ChunkError, ErrorText: "the server is shutting down; resume the stream"})
	default:
		h.deps.Log.Warn("ai-sdk stream ended", "chat_id", chatID, "err", err)
		out.chunk(Chunk{Type: ChunkError, ErrorText: "stream error; resume the stream"})
	}
	out.done()
}

// writeError answers an error before a stream starts: the native API's
// own answer when it came from there, else the same JSON shape.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *sdk.Error
	if !errors.As(err, &e) {
		if r.Context().Err() != nil {
			return
		}
		h.deps.Log.Error("ai-sdk request failed", "path", r.URL.Path, "err", err)
		e = &sdk.Error{StatusCode: http.StatusInternalServerError,
			Response: sdk.Response{Message: "An unexpected error occurred; the server logged it.", Code: sdk.CodeInternal}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.StatusCode)
	_ = json.NewEncoder(w).Encode(e.Response)
}

func validation(field, detail string) *sdk.Error {
	return &sdk.Error{StatusCode: http.StatusBadRequest, Response: sdk.Response{
		Message: "Validation failed: " + detail + ".", Code: sdk.CodeValidation,
		Validations: []sdk.ValidationError{{Field: field, Detail: detail}},
	}}
}

func isCode(err error, code string) bool {
	var e *sdk.Error
	return errors.As(err, &e) && e.Code == code
}

// decodeBody reads a JSON body of at most limit bytes into v.
func decodeBody(r *http.Request, limit int64, v any) error {
	body := http.MaxBytesReader(nil, r.Body, limit)
	raw, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &sdk.Error{StatusCode: http.StatusRequestEntityTooLarge, Response: sdk.Response{
			Message: fmt.Sprintf("The body is over %d bytes.", limit), Code: sdk.CodeTooLarge}}
	case err != nil:
		return validation("body", "the body could not be read")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return validation("body", "malformed JSON: "+err.Error())
	}
	return nil
}
