// Package admin is the operator's request/response protocol: the commands
// the CLI runs against a database (token create, list and revoke, login
// links; later backups). One dispatcher answers them, so the same code
// runs whether the CLI reaches a running server over its admin socket
// (JSON over HTTP on a Unix socket, mode 0600, next to the SQLite file) or
// opens the database itself (no server running, or Postgres).
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/store"
)

// SocketSuffix is appended to the SQLite file's absolute path to name the
// admin socket (./chatd.db.sock).
const SocketSuffix = ".sock"

// Command names, the path of each request (POST /v1/<command>).
const (
	CmdTokenCreate = "token.create"
	CmdTokenList   = "token.list"
	CmdTokenRevoke = "token.revoke"
	CmdLoginLink   = "login.link"
)

// LoginLinkRequest mints a one-time login link for User (default admin).
type LoginLinkRequest struct {
	User string `json:"user,omitempty"`
}

// LoginLinkResponse is the link, its code and when it stops working.
type LoginLinkResponse struct {
	URL       string    `json:"url"`
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expires_at"`
}

// LoginURL is the web UI's login address for code on the server at base.
// The code is in the fragment, which browsers never send or log.
func LoginURL(base, code string) string {
	return strings.TrimRight(base, "/") + "/login#code=" + code
}

// TokenCreateRequest mints an API token.
type TokenCreateRequest struct {
	User  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
	Label string `json:"label,omitempty"`
	// ExpiresIn, when positive, gives the token a fixed expiry.
	ExpiresIn time.Duration `json:"expires_in,omitempty"`
}

// TokenCreateResponse carries the new token, shown once.
type TokenCreateResponse struct {
	Token string         `json:"token"`
	Info  auth.TokenInfo `json:"info"`
}

// TokenListRequest lists every token, or one user's.
type TokenListRequest struct {
	User string `json:"user,omitempty"`
}

// TokenListResponse lists tokens without their secrets.
type TokenListResponse struct {
	Tokens []auth.TokenInfo `json:"tokens"`
}

// TokenRevokeRequest revokes one token by ID, or with All every token of
// User.
type TokenRevokeRequest struct {
	ID   uuid.UUID `json:"id,omitzero"`
	User string    `json:"user,omitempty"`
	All  bool      `json:"all,omitempty"`
}

// TokenRevokeResponse says what went.
type TokenRevokeResponse struct {
	Revoked int64           `json:"revoked"`
	Token   *auth.TokenInfo `json:"token,omitempty"` // the one revoked by ID
}

// Error codes of the protocol.
const (
	CodeBadRequest = "bad_request"
	CodeNotFound   = "not_found"
	CodeConflict   = "conflict" // the state does not allow it (a request that is not unresolved)
	CodeInternal   = "internal"
)

// Error is a refused command. Over the socket it is the whole answer; an
// Error with CodeNotFound matches store.ErrNotFound on both paths.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Message }

// Is makes a not-found answer match store.ErrNotFound.
func (e *Error) Is(target error) bool { return e.Code == CodeNotFound && target == store.ErrNotFound }

func badRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// Ops are what the commands act on.
type Ops struct {
	Tokens *auth.Tokens
	// Invocations answers invocation.*; nil refuses them.
	Invocations Invocations
	// BaseURL is the web UI's address for login links (the serving
	// server's own, or http://CHATD_ADDR when the CLI opens the database).
	BaseURL string
	// Backup writes a consistent snapshot of the SQLite database to a new
	// file at dest (nil: not SQLite, refused).
	Backup func(ctx context.Context, dest string) error
}

// Do runs one command on a JSON request and returns its JSON answer. Both
// the socket and the direct path go through it.
func (o *Ops) Do(ctx context.Context, cmd string, body []byte) (any, error) {
	switch cmd {
	case CmdInvocationInspect, CmdInvocationReconcile:
		return o.doInvocation(ctx, cmd, body)
	case CmdBackup:
		return o.doBackup(ctx, body)
	case CmdTokenCreate:
		var req TokenCreateRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		if strings.TrimSpace(req.User) == "" {
			return nil, badRequest("user is required")
		}
		token, info, err := o.Tokens.Create(ctx, auth.CreateParams{User: req.User, Admin: req.Admin, Label: req.Label, ExpiresIn: req.ExpiresIn})
		if err != nil {
			return nil, err
		}
		return TokenCreateResponse{Token: token, Info: info}, nil
	case CmdLoginLink:
		var req LoginLinkRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		if req.User == "" {
			req.User = auth.AdminName
		}
		code, exp, err := o.Tokens.CreateLoginCode(ctx, req.User)
		if errors.Is(err, auth.ErrUserDisabled) {
			return nil, &Error{Code: CodeConflict, Message: fmt.Sprintf("user %q is disabled", req.User)}
		}
		if err != nil {
			return nil, err
		}
		return LoginLinkResponse{URL: LoginURL(o.BaseURL, code), Code: code, ExpiresAt: exp}, nil
	case CmdTokenList:
		var req TokenListRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		list, err := o.Tokens.List(ctx, req.User)
		if err != nil {
			return nil, err
		}
		return TokenListResponse{Tokens: list}, nil
	case CmdTokenRevoke:
		var req TokenRevokeRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		switch {
		case req.ID != uuid.Nil && (req.All || req.User != ""):
			return nil, badRequest("give a token id, or a user with all, not both")
		case req.ID != uuid.Nil:
			info, err := o.Tokens.Revoke(ctx, req.ID)
			if err != nil {
				return nil, err
			}
			return TokenRevokeResponse{Revoked: 1, Token: &info}, nil
		case req.All && req.User != "":
			n, err := o.Tokens.RevokeAll(ctx, req.User)
			if err != nil {
				return nil, err
			}
			return TokenRevokeResponse{Revoked: n}, nil
		}
		return nil, badRequest("give a token id, or a user with all")
	}
	return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("unknown command %q", cmd)}
}

func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed request: %v", err)
	}
	return nil
}

// toError turns any failure into the protocol's Error.
func toError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, store.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: err.Error()}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// maxBody caps a request; commands are small.
const maxBody = 1 << 20

// Handler serves the commands: POST /v1/<command> with a JSON body answers
// 200 with the JSON result, or 4xx/5xx with an Error.
func Handler(ops *Ops) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/{command}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, badRequest("request too large"))
			return
		}
		out, err := ops.Do(r.Context(), r.PathValue("command"), body)
		if err != nil {
			e := toError(err)
			status := http.StatusInternalServerError
			switch e.Code {
			case CodeBadRequest:
				status = http.StatusBadRequest
			case CodeNotFound:
				status = http.StatusNotFound
			case CodeConflict:
				status = http.StatusConflict
			}
			writeJSON(w, status, e)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, &Error{Code: CodeNotFound, Message: "use POST /v1/<command>"})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client runs commands; Call decodes the answer into resp.
type Client interface {
	Call(ctx context.Context, cmd string, req, resp any) error
	// Via says how the command is carried, for messages ("the server at
	// ./chatd.db.sock", "the database").
	Via() string
}

// Local runs commands in this process, through the same dispatcher and
// JSON encoding as the socket.
func Local(ops *Ops) Client { return local{ops} }

type local struct{ ops *Ops }

func (l local) Via() string { return "the database" }

func (l local) Call(ctx context.Context, cmd string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", cmd, err)
	}
	out, err := l.ops.Do(ctx, cmd, body)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("%s: encode the answer: %w", cmd, err)
	}
	return json.Unmarshal(raw, resp)
}

// Dial returns a client for the server listening on the Unix socket path.
func Dial(path string) Client {
	var d net.Dialer
	return &socketClient{path: path, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}}}
}

type socketClient struct {
	path string
	http *http.Client
}

func (c *socketClient) Via() string { return "the running server at " + c.path }

func (c *socketClient) Call(ctx context.Context, cmd string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", cmd, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://chatd/v1/"+cmd, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(hreq)
	if err != nil {
		return fmt.Errorf("%s via %s: %w", cmd, c.path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s via %s: read the answer: %w", cmd, c.path, err)
	}
	if res.StatusCode != http.StatusOK {
		e := &Error{}
		if err := json.Unmarshal(raw, e); err != nil || e.Code == "" {
			return fmt.Errorf("%s via %s: %s", cmd, c.path, res.Status)
		}
		return e
	}
	if err := json.Unmarshal(raw, resp); err != nil {
		return fmt.Errorf("%s via %s: decode the answer: %w", cmd, c.path, err)
	}
	return nil
}
