package stream

import (
	"encoding/json"
	"net/http"

	"github.com/chatd/chatd/app/sdk"
)

// refusal is the ResponseWriter given to websocket.Accept. The library
// answers a request it refuses (no upgrade headers, a bad version, a
// foreign Origin) with a plain-text http.Error; refusal holds that answer
// back so answer can write the API's JSON error shape (API.md) with the
// same status instead. A successful upgrade passes straight through: the
// library reaches the connection through Unwrap.
type refusal struct {
	http.ResponseWriter
	status int // the refused status, 0 until the library writes one
	reason []byte
}

func (w *refusal) WriteHeader(code int) {
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.status == 0 {
		w.status = code
	}
}

func (w *refusal) Write(b []byte) (int, error) {
	if w.status == 0 {
		return w.ResponseWriter.Write(b)
	}
	if len(w.reason) < 512 {
		w.reason = append(w.reason, b...)
	}
	return len(b), nil
}

// Unwrap lets the library (and http.ResponseController) reach the real
// writer to hijack it.
func (w *refusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answer writes the held-back refusal as JSON; it does nothing when the
// library wrote no error.
func (w *refusal) answer() {
	if w.status == 0 {
		return
	}
	code := sdk.CodeValidation
	message := "This endpoint answers WebSocket upgrades only."
	switch w.status {
	case http.StatusForbidden:
		code, message = sdk.CodeForbidden, "The WebSocket's Origin is not this server's."
	case http.StatusMethodNotAllowed:
		code = sdk.CodeMethodNotAllowed
	case http.StatusUpgradeRequired, http.StatusBadRequest:
	default:
		code, message = sdk.CodeInternal, "The WebSocket upgrade failed."
	}
	h := w.ResponseWriter.Header()
	// http.Error set these for its text; the answer is JSON now.
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.ResponseWriter.WriteHeader(w.status)
	enc := json.NewEncoder(w.ResponseWriter)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(sdk.Response{Message: message, Detail: string(trimNewline(w.reason)), Code: code})
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// badRequest answers a request the stream cannot serve as asked (a bad
// query parameter) with the API's JSON error, before any upgrade.
func badRequest(w http.ResponseWriter, message string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(sdk.Response{Message: message, Code: sdk.CodeValidation})
}
