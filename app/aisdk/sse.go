package aisdk

import (
	"encoding/json"
	"net/http"
	"time"
)

// writeTimeout bounds one write to the client: a client that takes no
// data for this long is given up on (the turn goes on regardless).
const writeTimeout = 10 * time.Second

// sse writes the UI message stream: `data: {chunk}` frames, `data: [DONE]`
// at the end, `: ping` comments while nothing happens.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	now func() time.Time
	err error
}

// startSSE sends the stream's headers (UI_MESSAGE_STREAM_HEADERS of the
// `ai` package). The server's write timeout does not end the stream: each
// write sets its own deadline.
func startSSE(w http.ResponseWriter, now func() time.Time) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	h.Set("X-Accel-Buffering", "no")
	s := &sse{w: w, rc: http.NewResponseController(w), now: now}
	_ = s.rc.SetWriteDeadline(now().Add(writeTimeout))
	w.WriteHeader(http.StatusOK)
	s.flush()
	return s
}

// chunk writes one chunk frame (buffered until flush).
func (s *sse) chunk(c Chunk) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		s.err = err
		return
	}
	s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sse) ping() {
	s.write([]byte(": ping\n\n"))
	s.flush()
}

func (s *sse) done() {
	s.write([]byte("data: [DONE]\n\n"))
	s.flush()
}

func (s *sse) write(b []byte) {
	if s.err != nil {
		return
	}
	_ = s.rc.SetWriteDeadline(s.now().Add(writeTimeout))
	_, s.err = s.w.Write(b)
}

func (s *sse) flush() {
	if s.err == nil {
		s.err = s.rc.Flush()
	}
}
