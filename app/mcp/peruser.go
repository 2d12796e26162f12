package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// DefaultUserSessionIdle is how long a user's session to a per-user server
// stays open after its last use.
const DefaultUserSessionIdle = 10 * time.Minute

// Errors of a user's Connect and Disconnect.
var (
	// ErrNoSuchServer: no configured server the user may use has the id.
	ErrNoSuchServer error = &userError{msg: "no such MCP server", notFound: true}
	// ErrNotPerUser: the server's identity is shared; an admin connects
	// it (Reconnect).
	ErrNotPerUser error = &userError{msg: "the MCP server's identity is not each user's: an admin connects it for everyone"}
)

// userError is a user's Connect or Disconnect that cannot be done;
// NotFound tells the API to answer 404.
type userError struct {
	msg      string
	notFound bool
}

func (e *userError) Error() string  { return e.msg }
func (e *userError) NotFound() bool { return e.notFound }

// NeedsUserAuthError is a per-user server's call by a user who has not
// connected it (or whose authorization ended): the user connects it in
// Settings and tries again.
type NeedsUserAuthError struct{ Server string }

func (e *NeedsUserAuthError) Error() string {
	return fmt.Sprintf("MCP server %s acts as each user, and the chat's owner has not connected it (or the authorization expired): "+
		"connect %s in Settings → MCP servers, then try again", e.Server, e.Server)
}

func needsUserAuth(s *server) error { return &NeedsUserAuthError{Server: s.cfg.Name} }

// perUser reports whether s's identity is each user's (oauth.per_user).
func (s *server) perUser() bool { return s.cfg.URL != "" && s.cfg.OAuth != nil && s.cfg.OAuth.PerUser }

// userConn is one user's connection to a per-user server: the user's
// authorization and, while used, a session made with it.
type userConn struct {
	user uuid.UUID
	auth *serverAuth // nil until the user connects or a stored token is found

	session    *session
	connecting chan struct{} // closed when the attempt in progress ends; nil when none
	err        error         // how the last attempt failed (nil: it did not)
	stopIdle   func() bool   // the idle timer of session
	idleGen    int           // which idle timer is current
}

// conn returns s's connection of user (made empty on first use). Under
// s.usersMu.
func (s *server) connLocked(user uuid.UUID) *userConn {
	if s.users == nil {
		s.users = map[uuid.UUID]*userConn{}
	}
	uc, ok := s.users[user]
	if !ok {
		uc = &userConn{user: user}
		s.users[user] = uc
	}
	return uc
}

// alive reports whether c has not ended.
func alive(c *session) bool {
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// userSession returns user's live session to the per-user server s,
// connecting it with the user's stored tokens when needed (at most the
// connect timeout, while ctx lasts). A user with no tokens gets a
// *NeedsUserAuthError; never is another user's connection used.
func (m *Manager) userSession(ctx context.Context, s *server, user uuid.UUID) (*session, error) {
	if user == uuid.Nil {
		return nil, needsUserAuth(s)
	}
	var timer <-chan time.Time
	for {
		if m.ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %s: chatd is shutting down", s.cfg.Name)
		}
		if s.ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %s was removed or changed", s.cfg.Name)
		}
		s.usersMu.Lock()
		uc := s.connLocked(user)
		if alive(uc.session) {
			c := uc.session
			m.touchLocked(s, uc)
			s.usersMu.Unlock()
			return c, nil
		}
		if ch := uc.connecting; ch != nil {
			s.usersMu.Unlock()
			if timer == nil {
				t := m.clock.NewTimer(m.connectTimeout)
				defer t.Stop()
				timer = t.C()
			}
			select {
			case <-ch:
				s.usersMu.Lock()
				cur := s.users[user]
				var err error
				if cur == uc && !alive(uc.session) {
					err = uc.err
				}
				s.usersMu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer:
				return nil, fmt.Errorf("MCP server %s is still connecting (or awaits the user's consent)", s.cfg.Name)
			}
		}
		if uc.auth == nil {
			s.usersMu.Unlock()
			if m.tokens == nil || m.loadToken(s, user) == nil {
				return nil, needsUserAuth(s)
			}
			a, err := m.newAuth(s, user)
			if err != nil {
				return nil, err
			}
			s.usersMu.Lock()
			uc = s.connLocked(user)
			if uc.auth == nil {
				uc.auth = a
			}
		}
		if uc.connecting == nil && !alive(uc.session) {
			m.startUserLocked(s, uc)
		}
		s.usersMu.Unlock()
	}
}

// startUserLocked begins connecting uc with its authorization, in the
// background. Under s.usersMu.
func (m *Manager) startUserLocked(s *server, uc *userConn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || s.ctx.Err() != nil {
		return
	}
	done := make(chan struct{})
	uc.connecting, uc.err = done, nil
	a := uc.auth
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(done)
		c, err := m.connect(s, a)
		s.usersMu.Lock()
		defer s.usersMu.Unlock()
		if cur := s.users[uc.user]; cur != uc || uc.auth != a || s.ctx.Err() != nil {
			// Disconnected or reconnected meanwhile, or retired.
			if c != nil {
				go c.close()
			}
			return
		}
		uc.connecting = nil
		if err != nil {
			var need *NeedsUserAuthError
			if errors.As(err, &need) {
				uc.auth = nil // its tokens no longer work: the user connects again
				uc.err = need
			} else {
				uc.err = errors.New(s.redact(err.Error()))
			}
			m.log.Warn("a user's connection to an MCP server failed", "mcp_server", s.cfg.Name, "user_id", uc.user, "err", uc.err)
			s.mu.Lock()
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
		uc.session = c
		a.interactive.Store(false)
		m.touchLocked(s, uc)
		s.mu.Lock()
		s.known = c.tools
		s.notifyLocked()
		s.mu.Unlock()
	}()
}

// touchLocked restarts uc's idle timer: the session closes after
// DefaultUserSessionIdle without use. Under s.usersMu.
func (m *Manager) touchLocked(s *server, uc *userConn) {
	if stop := uc.stopIdle; stop != nil {
		go stop() // its timer may be firing, waiting for s.usersMu
	}
	uc.idleGen++
	c, gen := uc.session, uc.idleGen
	uc.stopIdle = m.after(m.userIdle, func() {
		s.usersMu.Lock()
		mine := uc.session == c && uc.idleGen == gen
		if mine {
			uc.session, uc.stopIdle = nil, nil
		}
		s.usersMu.Unlock()
		if mine {
			c.close()
		}
	})
}

// ConnectUser begins u's own authorization of the per-user server id,
// forgetting any connection u had: it returns once the authorization
// server's consent page is known (status needs_authorization with its
// URL), or the connection ended (authorized or failed), at most the
// connect timeout and while ctx lasts. The callback that completes it is
// bound to u by the flow's state.
func (m *Manager) ConnectUser(ctx context.Context, id uuid.UUID, u tools.User) (sdk.MCPAuthStatus, error) {
	s, err := m.perUserServer(id, u)
	if err != nil {
		return sdk.MCPAuthStatus{}, err
	}
	m.disconnect(s, u.ID)
	a, err := m.newAuth(s, u.ID)
	if err != nil {
		return sdk.MCPAuthStatus{}, err
	}
	a.interactive.Store(true)
	s.usersMu.Lock()
	uc := s.connLocked(u.ID)
	uc.auth = a
	m.startUserLocked(s, uc)
	done := uc.connecting
	s.usersMu.Unlock()
	if done == nil {
		return sdk.MCPAuthStatus{}, fmt.Errorf("MCP server %s: chatd is shutting down", s.cfg.Name)
	}
	timer := m.clock.NewTimer(m.connectTimeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if st := m.userAuthStatus(s, u.ID); st.Status == sdk.MCPAuthNeedsAuthorization {
			return st, nil
		}
		select {
		case <-done:
			return m.userAuthStatus(s, u.ID), nil
		case <-changed:
		case <-ctx.Done():
			return m.userAuthStatus(s, u.ID), nil
		case <-timer.C():
			return m.userAuthStatus(s, u.ID), nil
		}
	}
}

// DisconnectUser ends u's own connection to the per-user server id and
// forgets u's tokens for it; other users' connections stay.
func (m *Manager) DisconnectUser(id uuid.UUID, u tools.User) error {
	s, err := m.perUserServer(id, u)
	if err != nil {
		return err
	}
	m.disconnect(s, u.ID)
	return nil
}

// perUserServer is the per-user server id that u may use.
func (m *Manager) perUserServer(id uuid.UUID, u tools.User) (*server, error) {
	m.cfgMu.RLock()
	s, ok := m.byID[id]
	m.cfgMu.RUnlock()
	switch {
	case !ok || !s.allows(u):
		return nil, ErrNoSuchServer
	case !s.perUser():
		return nil, ErrNotPerUser
	case s.cfg.Disabled:
		return nil, fmt.Errorf("MCP server %s is disabled", s.cfg.Name)
	}
	return s, nil
}

// disconnect closes user's session to s and forgets the user's tokens.
func (m *Manager) disconnect(s *server, user uuid.UUID) {
	s.usersMu.Lock()
	uc := s.users[user]
	delete(s.users, user)
	s.usersMu.Unlock()
	if uc != nil {
		closeUser(uc)
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	if err := m.tokenForget(ctx, s.cfg.ID, user); err != nil {
		m.log.Warn("forget a user's OAuth token of an MCP server", "mcp_server", s.cfg.Name, "user_id", user, "err", err)
	}
}

// closeUser closes uc's session (taken out of its server already).
func closeUser(uc *userConn) {
	if uc.stopIdle != nil {
		uc.stopIdle()
	}
	if uc.session != nil {
		uc.session.close()
	}
}

// closeUsers closes every user's session of s (retired, or Close).
func (s *server) closeUsers() {
	s.usersMu.Lock()
	users := s.users
	s.users = nil
	s.usersMu.Unlock()
	for _, uc := range users {
		closeUser(uc)
	}
}

// userAuthStatus is user's authorization status of the per-user server s.
func (m *Manager) userAuthStatus(s *server, user uuid.UUID) sdk.MCPAuthStatus {
	s.usersMu.Lock()
	uc := s.users[user]
	var (
		a       *serverAuth
		live    bool
		pending bool
		lastErr string
	)
	if uc != nil {
		a, live, pending = uc.auth, alive(uc.session), uc.connecting != nil
		if uc.err != nil {
			lastErr = uc.err.Error()
		}
	}
	s.usersMu.Unlock()
	switch {
	case live:
		return sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized, PerUser: true}
	case a != nil:
		if st := a.get(); st != nil && (pending || st.Status != sdk.MCPAuthAuthorized) {
			st.PerUser = true
			return *st
		}
		if pending {
			return sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized, PerUser: true}
		}
	}
	if lastErr != "" {
		return sdk.MCPAuthStatus{Status: sdk.MCPAuthNeedsUserAuthorization, Error: lastErr, PerUser: true}
	}
	if m.tokens != nil && m.loadToken(s, user) != nil {
		return sdk.MCPAuthStatus{Status: sdk.MCPAuthAuthorized, PerUser: true}
	}
	return sdk.MCPAuthStatus{Status: sdk.MCPAuthNeedsUserAuthorization, PerUser: true}
}

// userStatus is s's status as u sees it: u's own connection. A user who
// holds tokens is connected in the background (like Status starts the
// shared servers); one who has none sees state failed with what to do.
func (m *Manager) userStatus(s *server, u tools.User) sdk.MCPServer {
	st := sdk.MCPServer{ID: s.cfg.ID, Name: s.cfg.Name, Transport: s.transport, State: sdk.MCPStateConnecting, Tools: []sdk.MCPTool{}}
	if s.cfg.Disabled {
		st.State = sdk.MCPStateDisabled
		return st
	}
	auth := m.userAuthStatus(s, u.ID)
	st.Auth = &auth
	s.usersMu.Lock()
	uc := s.users[u.ID]
	switch {
	case uc != nil && alive(uc.session):
		st.State, st.Transport, st.Tools = sdk.MCPStateConnected, uc.session.transport, mcpTools(uc.session.tools)
	case uc != nil && uc.connecting != nil:
	case auth.Status == sdk.MCPAuthAuthorized:
		// Tokens stored: connect them now, like a shared server on
		// Status.
		uc = s.connLocked(u.ID)
		if uc.auth == nil {
			if a, err := m.newAuth(s, u.ID); err == nil {
				uc.auth = a
			}
		}
		if uc.auth != nil {
			m.startUserLocked(s, uc)
		}
	default:
		msg := needsUserAuth(s).Error()
		if auth.Error != "" {
			msg = auth.Error
		}
		st.State, st.LastError = sdk.MCPStateFailed, &msg
	}
	s.usersMu.Unlock()
	return st
}

// userTools is what a chat of owner gets of the per-user server s: the
// tools of owner's own session; without one (never connected, or its
// connection failed) the tools last listed by any user's session, whose
// calls then fail with what to do (connect it in Settings).
func (m *Manager) userTools(ctx context.Context, s *server, owner tools.User) []*Tool {
	c, err := m.userSession(ctx, s, owner.ID)
	if err == nil {
		return c.tools
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known
}
