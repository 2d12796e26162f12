package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// route is one authenticated endpoint, with a body that would be accepted
// for the owner of chat s (an A1 chat accepts every chat route).
type route struct {
	method, path, body string
}

func chatRoutes(s seeded) []route {
	rs := []route{
		{"GET", "/chats/{chat}", ""},
		{"PATCH", "/chats/{chat}", `{"title":"mine now"}`},
		{"PATCH", "/chats/{chat}", `{"archived":true}`},
		{"DELETE", "/chats/{chat}", ""},
		{"GET", "/chats/{chat}/messages", ""},
		{"POST", "/chats/{chat}/messages", sendQueueBody},
		{"POST", "/chats/{chat}/messages", sendInterruptBody},
		{"PATCH", "/chats/{chat}/messages/{message}", editBody},
		{"DELETE", "/chats/{chat}/queue/{queued}", ""},
		{"POST", "/chats/{chat}/queue/{queued}/promote", ""},
		{"POST", "/chats/{chat}/interrupt", ""},
		{"POST", "/chats/{chat}/tool-results", toolResultsBody},
		{"POST", "/chats/{chat}/tool-approvals", `{"approvals":[{"tool_call_id":"{call}","approved":true}]}`},
		{"POST", "/chats/{chat}/compact", ""},
		{"POST", "/chats/{chat}/clear", ""},
		{"POST", "/chats/{chat}/reconcile-invalid", ""},
	}
	for i := range rs {
		rs[i].path, rs[i].body = s.expand(rs[i].path), s.expand(rs[i].body)
	}
	return rs
}

// allRoutes is every authenticated route: the chat routes and the others.
func allRoutes(s seeded) []route {
	return append(chatRoutes(s),
		route{"POST", "/chats", `{"content":[{"type":"text","text":"hi"}]}`},
		route{"GET", "/chats", ""},
		route{"GET", "/chats/models", ""},
		route{"GET", "/users/me", ""},
		route{"GET", "/users", ""},
		route{"POST", "/users", `{"username":"zed"}`},
		route{"PATCH", "/users/alice", `{"disabled":true}`},
		route{"GET", "/users/me/tokens", ""},
		route{"POST", "/users/me/tokens", `{"token_name":"x"}`},
		route{"DELETE", "/users/me/tokens/" + uuid.NewString(), ""},
	)
}

func (r route) String() string { return r.method + " " + r.path }

func bodyOf(r route) any {
	if r.body == "" {
		return nil
	}
	return r.body
}

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, A1)
		before := h.view(t, s.id)
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			for _, r := range allRoutes(s) {
				for _, c := range []struct {
					name    string
					query   string
					headers []string
				}{
					{"no token", "", nil},
					{"unknown token", "", []string{"Authorization", "Bearer chatd_not-a-real-token"}},
					{"empty bearer", "", []string{"Authorization", "Bearer "}},
					{"basic scheme", "", []string{"Authorization", "Basic " + h.aliceToken}},
					{"unknown session header", "", []string{"Coder-Session-Token", "chatd_not-a-real-token"}},
					{"unknown cookie", "", []string{"Cookie", api.SessionCookie + "=chatd_not-a-real-token"}},
					{"oversize token", "", []string{"Authorization", "Bearer chatd_" + strings.Repeat("x", 600)}},
					{"token in the query", "?token=" + h.aliceToken, nil}, // not a credential
				} {
					resp := h.raw(t, r.method, prefix+r.path+c.query, bodyOf(r), c.headers...)
					e := requireJSONError(t, resp, http.StatusUnauthorized, sdk.CodeUnauthorized)
					require.NotEmpty(t, e.Message, "%s: %s", c.name, r)
				}
			}
		}
		require.Equal(t, before, h.view(t, s.id), "unauthenticated calls changed the chat")
	})
}

func TestSessionTokenHeader(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, W)
		r := h.raw(t, "GET", "/api/v2/users/me", nil, "Coder-Session-Token", h.aliceToken)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		me := decode[sdk.User](t, r.body)
		require.Equal(t, h.aliceID, me.ID)
		require.Equal(t, "alice", me.Name)
		require.False(t, me.Admin)

		r = h.raw(t, "GET", "/api/v2/chats/"+s.id.String(), nil, "Coder-Session-Token", h.aliceToken)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, s.id, decode[sdk.Chat](t, r.body).ID)

		r = h.raw(t, "POST", "/api/experimental/chats/"+s.id.String()+"/messages", sendQueueBody, "Coder-Session-Token", h.aliceToken)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		h.requireState(t, s.id, R0)

		// The bearer scheme is case-insensitive.
		r = h.raw(t, "GET", "/api/v2/users/me", nil, "Authorization", "bearer "+h.aliceToken)
		require.Equal(t, http.StatusOK, r.status)
	})
}

// Another user's chat is 404 on every chat route: its existence is not
// revealed, and the call changes nothing.
func TestOtherUsersChatIsNotFound(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		bob, _, _ := h.newUser(t, "bob")
		s := h.seed(t, A1)
		missing := seeded{id: uuid.New(), userMsg: s.userMsg, queued: s.queued, call: s.call}
		before := h.view(t, s.id)
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			bob.Prefix = prefix
			for i, r := range chatRoutes(s) {
				var out any
				err := bob.Do(h.ctx, r.method, r.path, rawBody(r.body), &out)
				e := requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)

				// Exactly what an absent chat answers.
				absent := chatRoutes(missing)[i]
				err = bob.Do(h.ctx, absent.method, absent.path, rawBody(absent.body), &out)
				e2 := requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
				require.Equal(t, e2.Response, e.Response, "%s", r)
			}
		}
		require.Equal(t, before, h.view(t, s.id), "another user's calls changed the chat")

		// Not listed, and not usable as a parent.
		list, err := bob.ListChats(h.ctx, sdk.ListChatsOptions{Archived: "all"})
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = bob.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("hi"), ParentChatID: &s.id})
		requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, before, h.view(t, s.id))
	})
}

// rawBody makes a JSON body for sdk.Client.Do (nil for none).
func rawBody(s string) any {
	if s == "" {
		return nil
	}
	return rawJSON(s)
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// An admin sees and acts on everyone's chats; users see their own.
func TestAdminSeesEveryone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		bob, bobUser, _ := h.newUser(t, "bob")
		aliceChat := h.seed(t, R0)
		bobChat, err := bob.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("bob's question")})
		require.NoError(t, err)
		require.Equal(t, bobUser.ID, bobChat.OwnerID)
		adminChat, err := h.admin.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)

		ids := func(cs []sdk.Chat) []uuid.UUID {
			out := []uuid.UUID{}
			for _, c := range cs {
				out = append(out, c.ID)
			}
			slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
			return out
		}
		sorted := func(us ...uuid.UUID) []uuid.UUID {
			slices.SortFunc(us, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
			return us
		}
		all, err := h.admin.ListChats(h.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Equal(t, sorted(aliceChat.id, bobChat.ID, adminChat.ID), ids(all))
		mine, err := h.alice.ListChats(h.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{aliceChat.id}, ids(mine))
		theirs, err := bob.ListChats(h.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{bobChat.ID}, ids(theirs))

		// The admin reads and acts on alice's chat; it stays hers.
		got, err := h.admin.Chat(h.ctx, aliceChat.id)
		require.NoError(t, err)
		require.Equal(t, h.aliceID, got.OwnerID)
		require.NoError(t, h.admin.UpdateChat(h.ctx, aliceChat.id, sdk.UpdateChatRequest{Title: ptr("Looked at by admin")}))
		res, err := h.admin.SendMessage(h.ctx, aliceChat.id, sdk.CreateChatMessageRequest{Content: sdk.Text("admin here")})
		require.NoError(t, err)
		require.True(t, res.Queued)
		_, err = h.admin.Interrupt(h.ctx, aliceChat.id)
		require.NoError(t, err)
		after := h.requireState(t, aliceChat.id, I1)
		require.Equal(t, "Looked at by admin", after.Chat.Title)
		require.Equal(t, h.aliceID, after.Chat.OwnerID)

		// Users cannot see the admin's chat either.
		_, err = h.alice.Chat(h.ctx, adminChat.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		require.NoError(t, h.admin.DeleteChat(h.ctx, bobChat.ID))
		_, err = bob.Chat(h.ctx, bobChat.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
	})
}

// Login exchanges a token for an HttpOnly SameSite=Strict session cookie;
// logout revokes the session, so the same cookie stops working.
func TestLoginLogout(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, W)

		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			r := h.raw(t, "POST", prefix+"/auth/login", `{"token":"`+h.aliceToken+`"}`)
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			require.Equal(t, h.aliceID, decode[sdk.User](t, r.body).ID)
			resp := http.Response{Header: r.header}
			var session *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == api.SessionCookie {
					session = c
				}
			}
			require.NotNil(t, session, "login sets %s", api.SessionCookie)
			require.True(t, session.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, session.SameSite)
			require.Equal(t, "/", session.Path)
			require.NotEqual(t, h.aliceToken, session.Value, "the cookie carries a session token, not the API token")
			cookie := api.SessionCookie + "=" + session.Value

			r = h.raw(t, "GET", prefix+"/users/me", nil, "Cookie", cookie)
			require.Equal(t, http.StatusOK, r.status)
			require.Equal(t, h.aliceID, decode[sdk.User](t, r.body).ID)
			r = h.raw(t, "GET", prefix+"/chats/"+s.id.String(), nil, "Cookie", cookie)
			require.Equal(t, http.StatusOK, r.status)

			r = h.raw(t, "POST", prefix+"/auth/logout", nil, "Cookie", cookie)
			require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
			cleared := (&http.Response{Header: r.header}).Cookies()
			require.True(t, slices.ContainsFunc(cleared, func(c *http.Cookie) bool {
				return c.Name == api.SessionCookie && c.MaxAge < 0
			}), "logout clears the cookie")

			r = h.raw(t, "GET", prefix+"/users/me", nil, "Cookie", cookie)
			requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeUnauthorized)
			r = h.raw(t, "GET", prefix+"/chats/"+s.id.String(), nil, "Cookie", cookie)
			requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeUnauthorized)

			// The API token itself survives the logout.
			_, err := h.alice.Me(h.ctx)
			require.NoError(t, err)
		}

		// Bad logins.
		r := h.raw(t, "POST", "/api/v2/auth/login", `{"token":"chatd_wrong"}`)
		requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeUnauthorized)
		require.Empty(t, r.header.Values("Set-Cookie"))
		r = h.raw(t, "POST", "/api/v2/auth/login", `{"token":""}`)
		requireJSONError(t, r, http.StatusUnauthorized, sdk.CodeUnauthorized)
		r = h.raw(t, "POST", "/api/v2/auth/login", `{"token":`)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		// Logging out without a session is harmless.
		r = h.raw(t, "POST", "/api/v2/auth/logout", nil)
		require.Equal(t, http.StatusNoContent, r.status)
	})
}
