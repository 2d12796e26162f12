// Package hookstest is a lifecycle hook consumer for tests: an httptest
// server that records every event it is sent, in order, and answers each
// as the test decides.
package hookstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/chatd/chatd/app/hooks"
)

// Consumer is a recording hook consumer. Point a hooks client at
// Server.URL.
type Consumer struct {
	Server *httptest.Server

	mu     sync.Mutex
	got    []hooks.Request
	answer func(hooks.Request) (int, string)
}

// New starts a consumer that answers 200 with an empty body until
// SetAnswer says otherwise; it is closed when the test ends.
func New(t testing.TB) *Consumer {
	c := &Consumer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req hooks.Request
		_ = json.Unmarshal(raw, &req)
		c.mu.Lock()
		c.got = append(c.got, req)
		answer := c.answer
		c.mu.Unlock()
		status, body := http.StatusOK, ""
		if answer != nil {
			status, body = answer(req)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(c.Server.Close)
	return c
}

// SetAnswer sets the status and body of the replies from now on (nil:
// 200 and an empty body).
func (c *Consumer) SetAnswer(fn func(hooks.Request) (int, string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answer = fn
}

// Events returns a copy of the events received so far, in order.
func (c *Consumer) Events() []hooks.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]hooks.Request(nil), c.got...)
}

// Names returns the names of the events received so far, in order.
func (c *Consumer) Names() []hooks.Event {
	var out []hooks.Event
	for _, r := range c.Events() {
		out = append(out, r.Event)
	}
	return out
}
