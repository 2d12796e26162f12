// Package loopback gives the protocol surfaces (app/aisdk, app/openaiapi)
// the native API as a Go client: an sdk.Client whose requests the API's own
// handler serves in process, authenticated with the credentials of the
// request being translated. Every write a surface makes thus goes through
// the same handlers as a native request: validation, lifecycle hooks, rate
// limits, durable request claims and the chatstate transitions behind
// them. A surface adds no second admission path.
package loopback

import (
	"bytes"
	"io"
	"net/http"

	"github.com/chatd/chatd/app/sdk"
)

// credentialHeaders are the request headers that carry the caller's
// credentials (API.md, Auth); they are the only headers copied.
var credentialHeaders = []string{"Authorization", "Coder-Session-Token", "Cookie"}

// Client returns a client of the API served by h, acting as the caller of
// r: its requests carry r's credentials, remote address and host.
func Client(h http.Handler, r *http.Request) *sdk.Client {
	return &sdk.Client{
		BaseURL: "http://loopback",
		HTTP:    &http.Client{Transport: transport{h: h, caller: r}},
	}
}

type transport struct {
	h      http.Handler
	caller *http.Request
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, k := range credentialHeaders {
		for _, v := range t.caller.Header.Values(k) {
			req.Header.Add(k, v)
		}
	}
	req.RemoteAddr = t.caller.RemoteAddr
	req.Host = t.caller.Host
	req.TLS = t.caller.TLS
	req.RequestURI = req.URL.RequestURI()
	if req.Body == nil {
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()),
		Request: req,
	}, nil
}

// recorder is the in-process response: the API's answers here are small
// JSON documents.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
