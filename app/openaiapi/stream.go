package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// watcher keeps a chat's state as the native stream tells it: the chat's
// status, its messages, and the live parts of the running step, assembled
// as the interrupt goroutine and the providers assemble them.
type watcher struct {
	chat    sdk.Chat
	msgs    map[int64]sdk.ChatMessage
	asm     *llm.Assembler
	episode [2]int64
	model   string
}

func (w *watcher) apply(e sdk.ChatStreamEvent) {
	switch e.Type {
	case sdk.StreamHistoryReset:
		w.msgs = map[int64]sdk.ChatMessage{}
	case sdk.StreamMessage:
		if m := e.Message; m != nil {
			// The stream passes stored content through raw.
			if parts, err := m.Parts(); err == nil {
				m.Content, m.RawContent = parts, nil
			}
			w.msgs[m.ID] = *m
		}
	case sdk.StreamStatus:
		if e.Status != nil {
			w.chat.Status = e.Status.Status
		}
	case sdk.StreamError:
		w.chat.LastError = e.Error
	case sdk.StreamPreviewReset:
		w.asm = nil
	case sdk.StreamMessagePart:
		p := e.MessagePart
		if p == nil {
			return
		}
		if ep := [2]int64{p.HistoryVersion, p.GenerationAttempt}; w.asm == nil || ep != w.episode {
			w.asm, w.episode = &llm.Assembler{}, ep
		}
		w.asm.Add(p.Part)
	}
}

func (w *watcher) sorted() []sdk.ChatMessage {
	out := make([]sdk.ChatMessage, 0, len(w.msgs))
	for _, m := range w.msgs {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b sdk.ChatMessage) int { return int(a.ID - b.ID) })
	return out
}

var errStop = errors.New("stop following")

// follow calls fn with the response's turn each time the native stream
// moves it, until fn reports done (or fails, or ctx ends).
func (s *Server) follow(ctx context.Context, c *caller, id string, fn func(t turn) (done bool, err error)) error {
	chatID, anchor, ok := parseResponseID(id)
	if !ok {
		return notFound("response", id)
	}
	chat, err := c.native.Chat(ctx, chatID)
	if err != nil {
		return notFoundIf(err, "response", id)
	}
	w := &watcher{chat: chat, msgs: map[int64]sdk.ChatMessage{}}
	err = s.deps.Watch(ctx, chatID, func(_ context.Context, evs []sdk.ChatStreamEvent) error {
		for _, e := range evs {
			w.apply(e)
		}
		msgs := w.sorted()
		t, found := newTurn(w.chat, msgs, anchor)
		if !found {
			return notFound("response", id)
		}
		if w.asm != nil {
			t.live = w.asm.Parts()
		}
		t.model = w.model
		if err := s.complete(ctx, c, &t, msgs); err != nil {
			return err
		}
		w.model = t.model
		done, err := fn(t)
		if err == nil && done {
			return errStop
		}
		return err
	})
	switch {
	case errors.Is(err, errStop):
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notFound("response", id)
	}
	return err
}

// await waits until the response ends and returns it.
func (s *Server) await(ctx context.Context, w http.ResponseWriter, c *caller, id string) (turn, error) {
	unbounded(w)
	var last turn
	err := s.follow(ctx, c, id, func(t turn) (bool, error) {
		last = t
		status, _ := t.status()
		return terminal(status), nil
	})
	return last, err
}

// streamResponse answers with the response's events after sequence
// number after, as server-sent events, until its terminal event.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, c *caller, id string, after int64, echo requestEcho) error {
	unbounded(w)
	flusher, _ := w.(http.Flusher)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
	}
	err := s.follow(r.Context(), c, id, func(t turn) (bool, error) {
		t.request = echo
		evs := t.events(after)
		start()
		for _, e := range evs {
			data, err := json.Marshal(e.data)
			if err != nil {
				return false, fmt.Errorf("encode %s: %w", e.typ, err)
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.typ, data); err != nil {
				return false, err
			}
			after = e.seq
		}
		if flusher != nil {
			flusher.Flush()
		}
		status, _ := t.status()
		return terminal(status), nil
	})
	if err != nil && started {
		// The stream has begun and cannot change its status: it ends, and
		// the client resumes it with starting_after (no event is invented
		// that would take a sequence number).
		if r.Context().Err() == nil {
			s.deps.Log.Warn("openai api: stream ended early", "response", id, "err", err)
		}
		return nil
	}
	return err
}

// unbounded lifts the server's write timeout from an answer that waits
// for a turn or streams it: the turn's own length bounds it, and the
// client's leaving ends it.
func unbounded(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}
