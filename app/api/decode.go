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

// pathIDs are the path wildcards that hold ids: what each names, and
// whether it is a positive integer (else a non-nil UUID).
var pathIDs = map[string]struct {
	noun  string
	isInt bool
}{
	"chat": {noun: "chat"}, "file": {noun: "file"}, "project": {noun: "project"}, "provider": {noun: "provider"},
	"modelConfig": {noun: "model config"}, "id": {noun: "MCP server"}, "token": {noun: "token"},
	"message": {noun: "message", isInt: true}, "queuedMessage": {noun: "queued message", isInt: true},
}

// errPathNotFound answers a path whose id segment cannot name anything
// (GET /chats/foo): the path names no resource, so it is 404 NOT_FOUND like
// an id that names none, not a 400 about parsing (bodies and queries keep
// their 400s).
func errPathNotFound(name, raw string) *apiError {
	id, ok := pathIDs[name]
	if !ok {
		id.noun = name
	}
	want := "a UUID"
	if id.isInt {
		want = "a positive integer"
	}
	return newError(http.StatusNotFound, sdk.CodeNotFound, "No such "+id.noun+".",
		fmt.Sprintf("%q is not a %s id (%s)", raw, id.noun, want))
}

func parsePathUUID(raw string) (uuid.UUID, bool) {
	id, err := uuid.Parse(raw)
	return id, err == nil && id != uuid.Nil
}

func parsePathInt(raw string) (int64, bool) {
	n, err := strconv.ParseInt(raw, 10, 64)
	return n, err == nil && n > 0
}

// validPathID: raw can name what the wildcard name holds (any value for a
// wildcard that is not an id: a user reference, a memory name).
func validPathID(name, raw string) bool {
	id, ok := pathIDs[name]
	switch {
	case !ok:
		return true
	case id.isInt:
		_, ok = parsePathInt(raw)
	default:
		_, ok = parsePathUUID(raw)
	}
	return ok
}

// pathUUID reads a path id that is a UUID; anything else names nothing.
func pathUUID(r *http.Request, name string) (uuid.UUID, error) {
	raw := r.PathValue(name)
	id, ok := parsePathUUID(raw)
	if !ok {
		return uuid.Nil, errPathNotFound(name, raw)
	}
	return id, nil
}

// pathInt reads a path id that is a positive integer; anything else names
// nothing.
func pathInt(r *http.Request, name string) (int64, error) {
	raw := r.PathValue(name)
	n, ok := parsePathInt(raw)
	if !ok {
		return 0, errPathNotFound(name, raw)
	}
	return n, nil
}

// namesResource reports whether path, which pattern matched, holds a
// well-formed id in each of the pattern's id wildcards. A path that does
// not (/chats/foo) names no resource whatever the method, so it is 404,
// not 405 (allowedMethods).
func namesResource(pattern, path string) bool {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	segs := strings.Split(path, "/")
	for i, seg := range strings.Split(pattern, "/") {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok || i >= len(segs) {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "}"), "...")
		if !validPathID(name, segs[i]) {
			return false
		}
	}
	return true
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
