package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

var (
	errUserNotFound  = newError(http.StatusNotFound, sdk.CodeNotFound, "User not found.", "")
	errTokenNotFound = newError(http.StatusNotFound, sdk.CodeNotFound, "Token not found.", "")
	errLastAdmin     = newError(http.StatusConflict, sdk.CodeLastAdmin,
		"The last enabled admin cannot be disabled or demoted; make another user an admin first.", "")
	errUserExists       = newError(http.StatusConflict, sdk.CodeUserExists, "A user with this username exists.", "")
	errLoginCodeInvalid = newError(http.StatusUnauthorized, sdk.CodeLoginCodeInvalid,
		"This login link is invalid, already used or expired.", "Run `chatd login-link` for a new one.")
	errOwnTokensOnly = newError(http.StatusForbidden, sdk.CodeForbidden, "Tokens can only be created for yourself.", "")
)

// userError turns the auth package's errors into answers.
func userError(err error) error {
	var ve *auth.ValidationError
	switch {
	case errors.As(err, &ve):
		return validation(ve.Field, ve.Detail)
	case errors.Is(err, auth.ErrLastAdmin):
		return errLastAdmin
	case errors.Is(err, auth.ErrUserExists):
		return errUserExists
	case errors.Is(err, auth.ErrLoginCodeInvalid):
		return errLoginCodeInvalid
	}
	return err
}

func (s *Server) userRoutes() {
	chat := func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error) {
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			s.mux.Handle(method+" "+prefix+path, s.instrument(method+" /api/*"+path, s.handle(s.authed(s.limitWrites(h)))))
		}
	}
	chat("GET", "/users", s.listUsers)
	chat("POST", "/users", s.createUser)
	chat("PATCH", "/users/{user}", s.patchUser)
	chat("GET", "/users/{user}/tokens", s.listTokens)
	chat("POST", "/users/{user}/tokens", s.createToken)
	chat("DELETE", "/users/{user}/tokens/{token}", s.revokeToken)
	chat("POST", "/users/{user}/login-link", s.createLoginLink)
}

var errUserDisabled = newError(http.StatusConflict, sdk.CodeUserDisabled, "The user is disabled: enable them first.", "")

// createLoginLink mints a one-time login code for a user (admins only,
// themselves included): what `chatd login-link --user NAME` prints, for a
// user created in the web UI to sign in without a shell on the server.
func (s *Server) createLoginLink(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	code, exp, err := s.deps.Tokens.CreateLoginCode(r.Context(), u.Name)
	switch {
	case errors.Is(err, auth.ErrUserDisabled):
		return errUserDisabled
	case errors.Is(err, store.ErrNotFound):
		return errUserNotFound
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusCreated, sdk.LoginLink{Code: code, Path: "/login#code=" + code, ExpiresAt: exp})
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	users, err := s.deps.Tokens.Users(r.Context())
	if err != nil {
		return err
	}
	out := sdk.UsersResponse{Users: make([]sdk.User, 0, len(users)), Count: len(users)}
	for _, u := range users {
		out.Users = append(out.Users, toUser(u))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	var req sdk.CreateUserRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	u, err := s.deps.Tokens.CreateUser(r.Context(), req.Name, req.Admin)
	if err != nil {
		return userError(err)
	}
	writeJSON(w, http.StatusCreated, toUser(u))
	return nil
}

// pathUser resolves {user}: "me", an id or a username. Only an admin may
// name someone else (others get 403 without learning whether they exist).
func (s *Server) pathUser(r *http.Request, c *caller) (store.User, error) {
	ref := r.PathValue("user")
	if ref == "me" || ref == c.user.Name || ref == c.user.ID.String() {
		return c.user, nil
	}
	if !c.user.Admin {
		return store.User{}, errAdminOnly
	}
	u, err := s.deps.Tokens.User(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, errUserNotFound
	}
	return u, err
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	var req sdk.UpdateUserRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := s.patchBudget(r.Context(), u.ID, req.Budget); err != nil {
		return err
	}
	u, err = s.deps.Tokens.UpdateUser(r.Context(), u.ID, auth.UserPatch{Disabled: req.Disabled, Admin: req.Admin})
	if errors.Is(err, store.ErrNotFound) {
		return errUserNotFound
	}
	if err != nil {
		return userError(err)
	}
	s.streams.recheck(u.ID) // disabled or no longer admin: their streams may have to end
	writeJSON(w, http.StatusOK, toUser(u))
	return nil
}

func toAPIKey(t auth.TokenInfo) sdk.APIKey {
	return sdk.APIKey{
		ID: t.ID, UserID: t.UserID, Username: t.User, TokenName: t.Label, Kind: string(t.Kind),
		CreatedAt: t.CreatedAt, LastUsed: t.LastUsedAt, ExpiresAt: t.ExpiresAt, Expired: t.Expired,
	}
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, c *caller) error {
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	list, err := s.deps.Tokens.List(r.Context(), u.Name)
	if errors.Is(err, store.ErrNotFound) {
		return errUserNotFound
	}
	if err != nil {
		return err
	}
	out := make([]sdk.APIKey, 0, len(list))
	for _, t := range list {
		out = append(out, toAPIKey(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, c *caller) error {
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	if u.ID != c.user.ID {
		return errOwnTokensOnly
	}
	var req sdk.CreateTokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var exp *time.Time
	switch {
	case req.Lifetime != 0 && req.ExpiresAt != nil:
		return validation("lifetime", "give lifetime or expires_at, not both")
	case req.Lifetime < 0:
		return validation("lifetime", "must be positive (nanoseconds)")
	case req.Lifetime > 0:
		at := s.deps.Clock.Now().Add(time.Duration(req.Lifetime))
		exp = &at
	case req.ExpiresAt != nil:
		exp = req.ExpiresAt
	}
	key, info, err := s.deps.Tokens.CreateAPIToken(r.Context(), u, req.TokenName, exp)
	if err != nil {
		return userError(err)
	}
	writeJSON(w, http.StatusCreated, sdk.GenerateAPIKeyResponse{Key: key, Token: toAPIKey(info)})
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, c *caller) error {
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "token")
	if err != nil {
		return err
	}
	if _, err := s.deps.Tokens.RevokeOf(r.Context(), u.ID, id); errors.Is(err, store.ErrNotFound) {
		return errTokenNotFound
	} else if err != nil {
		return err
	}
	s.streams.recheck(u.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
