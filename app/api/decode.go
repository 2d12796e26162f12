package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/sdk"
)

// decodeJSON reads one JSON value into v. Unknown fields are ignored
// (clients written for Coder's API send some we do not use); malformed JSON,
// wrong types and oversize bodies get clear 4xx answers.
func decodeJSON(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if bytes.Contains(raw, []byte(`\u0000`)) && hasNUL(raw) {
		// PostgreSQL cannot store NUL in text or jsonb; refuse it the same
		// way on every store.
		return validation("body", "strings must not contain the NUL character (\\u0000)")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return validation("body", "the body must hold exactly one JSON value")
	}
	return nil
}

// hasNUL reports whether any string (or key) in the JSON document holds NUL.
func hasNUL(raw []byte) bool {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return false // the real decode reports the syntax error
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return strings.ContainsRune(x, 0)
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[string]any:
			for k, e := range x {
				if strings.ContainsRune(k, 0) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc)
}

func decodeError(err error) error {
	var (
		maxErr    *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return newError(http.StatusRequestEntityTooLarge, sdk.CodeTooLarge,
			fmt.Sprintf("The request body is larger than %d bytes.", maxErr.Limit), "")
	case errors.Is(err, io.EOF):
		return validation("body", "the body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return validation("body", "the JSON body ends unexpectedly")
	case errors.As(err, &syntaxErr):
		return validation("body", fmt.Sprintf("malformed JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error()))
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return validation(field, fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value))
	}
	// Errors from UnmarshalJSON methods (e.g. a malformed UUID).
	return validation("body", err.Error())
}

// optUUID treats nil and the zero UUID (what Go clients send for unset
// fields) as absent.
func optUUID(u *uuid.UUID) uuid.NullUUID {
	if u == nil || *u == uuid.Nil {
		return uuid.NullUUID{}
	}
	return uuid.NullUUID{UUID: *u, Valid: true}
}

func pathUUID(r *http.Request, name string) (uuid.UUID, error) {
	raw := r.PathValue(name)
	id, err := uuid.Parse(raw)
	if err != nil || id == uuid.Nil {
		return uuid.Nil, validation(name, fmt.Sprintf("%q is not a valid UUID", raw))
	}
	return id, nil
}

func pathInt(r *http.Request, name string) (int64, error) {
	raw := r.PathValue(name)
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		return 0, validation(name, fmt.Sprintf("%q is not a valid id (a positive integer)", raw))
	}
	return n, nil
}

func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, validation(name, fmt.Sprintf("%q must be an integer between %d and %d", raw, lo, hi))
	}
	return n, nil
}

func checkEffort(field, v string) error {
	if v != "" && !slices.Contains(modelinfo.RequestEfforts, v) {
		return validation(field, fmt.Sprintf("unknown reasoning effort %q (want one of %s)", v, strings.Join(modelinfo.RequestEfforts, ", ")))
	}
	return nil
}

// checkModel validates an optional model id against the configured models.
func (s *Server) checkModel(field string, id uuid.NullUUID) error {
	if !id.Valid {
		return nil
	}
	for _, m := range s.deps.Models.List() {
		if m.ID == id.UUID {
			return nil
		}
	}
	return validation(field, fmt.Sprintf("unknown model config %s; see GET /api/v2/chats/models", id.UUID))
}

// inputParts validates user content: text parts within the text limit and
// file parts (checkFiles checks the files). allowEmpty admits [] (a chat
// created without a first message).
func (s *Server) inputParts(parts []sdk.ChatMessagePart, allowEmpty bool) ([]sdk.ChatMessagePart, error) {
	if len(parts) == 0 {
		if allowEmpty {
			return nil, nil
		}
		return nil, validation("content", "content is empty; send at least one text part")
	}
	out := make([]sdk.ChatMessagePart, 0, len(parts))
	total := 0
	for i, p := range parts {
		field := fmt.Sprintf("content[%d]", i)
		switch p.Type {
		case sdk.PartText:
			if strings.TrimSpace(p.Text) == "" {
				return nil, validation(field+".text", "text is empty")
			}
			total += len(p.Text)
			// Keep only what a text part means; Go clients send zero ids.
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: p.Text})
		case sdk.PartFile:
			fp, err := filePart(field, p)
			if err != nil {
				return nil, err
			}
			out = append(out, fp) // checkFiles (files.go) completes it
		case "":
			return nil, validation(field+".type", "part type is missing")
		default:
			return nil, validation(field+".type", fmt.Sprintf("unknown or non-input part type %q (want text or file)", p.Type))
		}
	}
	if total > s.cfg.MaxTextBytes {
		return nil, newError(http.StatusRequestEntityTooLarge, sdk.CodeTooLarge,
			fmt.Sprintf("The message has %d bytes of text; the limit is %d.", total, s.cfg.MaxTextBytes), "")
	}
	return out, nil
}

// busyBehavior validates busy_behavior (default queue).
func busyBehavior(v string) (chatstate.BusyBehavior, error) {
	switch v {
	case "", sdk.BusyBehaviorQueue:
		return chatstate.BusyQueue, nil
	case sdk.BusyBehaviorInterrupt:
		return chatstate.BusyInterrupt, nil
	}
	return "", validation("busy_behavior", fmt.Sprintf("unknown busy_behavior %q (want queue or interrupt)", v))
}
