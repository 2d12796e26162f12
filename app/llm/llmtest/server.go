package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Request is one request a Server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map, failing t when it is not a
// JSON object.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// Decode decodes the body into v, failing t on error.
func (r Request) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("llmtest: decode request body %s: %v", r.Body, err)
	}
}

// protocol is one provider's wire format.
type protocol interface {
	path() string
	// check returns an HTTP status and message when the request is not one
	// the real API would stream; 0 when it is fine.
	check(body map[string]any) (int, string)
	writeError(w http.ResponseWriter, status int, message string)
	stream(s *streamer, body map[string]any, r Reply)
}

// Server is a fake provider API on a real HTTP listener. It records every
// request and answers each with the next scripted Reply (the default reply
// when the script is empty). GET {base}/models answers the list SetModels
// set, and POST /api/show what SetOllamaShow set, without using the
// script. Safe for concurrent use.
type Server struct {
	// URL is the base URL to put in the provider's Config.BaseURL
	// (".../v1" for OpenAI, the server root for Anthropic).
	URL string

	proto  protocol
	base   string // basePath of URL
	ts     *httptest.Server
	closed chan struct{}
	once   sync.Once

	mu     sync.Mutex
	script []Reply
	def    Reply
	reqs   []Request
	models []ListedModel
	shows  map[string]OllamaShow
	// listFail, when its status is set, answers GET {base}/models.
	listFail Reply
}

// ListedModel is one entry of a fake server's GET /v1/models list.
type ListedModel struct {
	ID      string
	OwnedBy string // "llmtest" when empty
	// Fields are extra JSON fields of the entry, as servers add them:
	// vLLM's max_model_len, OpenRouter's context_length.
	Fields map[string]any
}

// OllamaShow is the answer of Ollama's POST /api/show for one model: its
// model_info (e.g. "llama.context_length": 131072) and its Modelfile
// parameters text (e.g. "num_ctx 8192\nstop \"<|eot_id|>\"").
type OllamaShow struct {
	ModelInfo  map[string]any
	Parameters string
}

func newServer(t testing.TB, proto protocol, basePath string, replies []Reply) *Server {
	s := &Server{proto: proto, base: basePath, closed: make(chan struct{}), script: replies, def: DefaultReply()}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.ts.URL + basePath
	t.Cleanup(s.Close)
	return s
}

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetDefault sets the reply used when the script is empty.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = r
}

// SetModels sets the list GET /v1/models answers (an empty list until
// set). Listing consumes no scripted reply.
func (s *Server) SetModels(models ...ListedModel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = models
}

// FailModels makes GET {base}/models answer r's HTTP error (HTTPError or
// EchoHeaders) instead of the list.
func (s *Server) FailModels(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listFail = r
}

// SetOllamaShow makes POST /api/show (at the server root, as Ollama has it)
// answer for model; models without one get Ollama's 404. Without any
// SetOllamaShow the route does not exist, as on servers other than Ollama.
func (s *Server) SetOllamaShow(model string, show OllamaShow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shows == nil {
		s.shows = map[string]OllamaShow{}
	}
	s.shows[model] = show
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Pending returns how many scripted replies are still unused.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Close releases hanging requests and shuts the server down. It is
// registered with t.Cleanup; calling it earlier is fine.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.ts.Close()
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.proto.writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	switch {
	case r.Method == http.MethodGet && r.URL.Path == s.base+"/models":
		list, fail := s.modelList(), s.listFail
		s.mu.Unlock()
		if fail.status != 0 {
			s.proto.writeError(w, fail.status, fail.errorMessage(r))
			return
		}
		writeJSON(w, http.StatusOK, list)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/api/show" && s.shows != nil:
		var req struct {
			Model string `json:"model"`
			Name  string `json:"name"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Model == "" {
			req.Model = req.Name
		}
		show, ok := s.shows[req.Model]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("model '%s' not found", req.Model)})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"modelfile": "FROM " + req.Model, "parameters": show.Parameters, "template": "{{ .Prompt }}",
			"details":    map[string]any{"format": "gguf", "family": "llama"},
			"model_info": show.ModelInfo, "capabilities": []string{"completion", "tools"},
		})
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.proto.path() {
		s.mu.Unlock()
		// A request to no route uses no scripted reply.
		s.proto.writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
		return
	}
	reply := s.def
	if len(s.script) > 0 {
		reply, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		s.proto.writeError(w, http.StatusBadRequest, "body is not a JSON object: "+err.Error())
		return
	}
	if status, msg := s.proto.check(m); status != 0 {
		s.proto.writeError(w, status, msg)
		return
	}
	if reply.status != 0 {
		s.proto.writeError(w, reply.status, reply.errorMessage(r))
		return
	}
	st := &streamer{w: w, r: r, closed: s.closed}
	if reply.raw != nil {
		for _, ev := range reply.raw {
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal([]byte(ev), &head)
			if head.Type != "" {
				st.raw("event: " + head.Type + "\n")
			}
			st.raw("data: " + ev + "\n\n")
		}
		return
	}
	s.proto.stream(st, m, reply)
}

// errorMessage is r's error message, with req's headers when r echoes
// them.
func (r Reply) errorMessage(req *http.Request) string {
	if !r.echo {
		return r.message
	}
	names := make([]string, 0, len(req.Header))
	for name := range req.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(r.message)
	b.WriteString("; request headers:")
	for _, name := range names {
		fmt.Fprintf(&b, " %s: %s;", name, strings.Join(req.Header[name], ", "))
	}
	return b.String()
}

// modelList renders the models in the list shape of GET /v1/models.
// s.mu is held.
func (s *Server) modelList() map[string]any {
	data := []any{}
	for _, m := range s.models {
		owner := m.OwnedBy
		if owner == "" {
			owner = "llmtest"
		}
		e := map[string]any{"id": m.ID, "object": "model", "created": 1700000000, "owned_by": owner}
		for k, v := range m.Fields {
			e[k] = v
		}
		data = append(data, e)
	}
	return map[string]any{"object": "list", "data": data}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// streamer writes server-sent events; headers go out with the first event,
// so a Hang before any event blocks before the response starts.
type streamer struct {
	w       http.ResponseWriter
	r       *http.Request
	closed  <-chan struct{}
	started bool
}

func (s *streamer) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one event; name "" writes a data-only event.
func (s *streamer) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("llmtest: marshal event: %v", err))
	}
	if name != "" {
		s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
		return
	}
	s.raw("data: " + string(b) + "\n\n")
}

func (s *streamer) raw(text string) {
	s.start()
	_, _ = io.WriteString(s.w, text)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// hang flushes what was written and blocks until the client goes away or
// the server closes, or a Pause is released: then it reports true, and
// the stream goes on.
func (s *streamer) hang(h *hangSignal) bool {
	if s.started {
		if f, ok := s.w.(http.Flusher); ok {
			f.Flush()
		}
	}
	h.start()
	select {
	case <-s.r.Context().Done():
	case <-s.closed:
	case <-h.release: // nil for Hang: never
		return true
	}
	return false
}
