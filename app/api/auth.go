package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// SessionCookie is the web UI's session cookie. It holds a session token
// minted at login, so revoking it (logout) ends the session.
const SessionCookie = "chatd_session"

// caller is the authenticated user of a request.
type caller struct {
	user store.User
}

func (c *caller) owns(chat store.Chat) bool {
	return c.user.Admin || chat.OwnerID == c.user.ID
}

// requestToken finds the token: Authorization: Bearer, then
// Coder-Session-Token, then the session cookie. fromCookie reports that it
// is the cookie's, which the forgery check (csrf.go) guards.
func requestToken(r *http.Request) (token string, fromCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok), false
		}
	}
	if tok := r.Header.Get("Coder-Session-Token"); tok != "" {
		return tok, false
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value, true
	}
	return "", false
}

// Authenticate resolves the request's user (exported for the stream and UI).
func (s *Server) Authenticate(r *http.Request) (store.User, error) {
	tok, _ := requestToken(r)
	return s.deps.Tokens.Authenticate(r.Context(), tok)
}

// authed wraps a handler that needs a user; it also caps the body.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *caller) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.Authenticate(r)
		if err != nil {
			return err
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		return h(w, r, &caller{user: u})
	}
}

// login exchanges an API token, or a login link's one-time code, for an
// HttpOnly SameSite=Strict cookie that carries a fresh session token of the
// same user.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	var req sdk.LoginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var (
		u   store.User
		err error
	)
	switch {
	case req.Token != "" && req.Code != "":
		return validation("code", "give a token or a code, not both")
	case req.Code != "":
		u, err = s.deps.Tokens.ExchangeLoginCode(r.Context(), req.Code)
		err = userError(err)
	default:
		u, err = s.deps.Tokens.Authenticate(r.Context(), req.Token)
	}
	if err != nil {
		return err
	}
	session, err := s.deps.Tokens.CreateSession(r.Context(), u)
	if err != nil {
		return err
	}
	// The server decides when the session ends (sliding CHATD_SESSION_TTL);
	// the cookie lives as long as browsers allow so it never ends first.
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: session, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r), MaxAge: 400 * 24 * 3600,
	})
	writeJSON(w, http.StatusOK, toUser(u))
	return nil
}

// logout revokes the session token and clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		u, authErr := s.deps.Tokens.Authenticate(r.Context(), c.Value)
		if err := s.deps.Tokens.RevokeToken(r.Context(), c.Value); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if authErr == nil {
			s.streams.recheck(u.ID) // the streams this session opened end
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secureCookie(r), MaxAge: -1,
	})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, c *caller) error {
	writeJSON(w, http.StatusOK, toUser(c.user))
	return nil
}

func toUser(u store.User) sdk.User {
	return sdk.User{ID: u.ID, Name: u.Name, Admin: u.Admin, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
}
