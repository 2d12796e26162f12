package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/sdk"
)

// attackerPage is a page of another origin on the same site (the same
// host, another port): SameSite=Strict still sends the session cookie with
// its requests. It tries what a forger can do without CORS: no-cors
// fetches with simple content types, a text/plain form shaped as JSON, and
// a login into an account of its choosing. The verbs are chatd's origin
// and the token it logs the visitor in with.
const attackerPage = `<!doctype html><title>attack</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="%[1]s/api/v2/chats">
<input name='{"content":[{"type":"text","text":"form"}],"pad":"' value='"}'></form>
<script>
(async () => {
  const victim = %[1]q;
  const body = JSON.stringify({content: [{type: 'text', text: 'forged'}]});
  const send = (path, init) => fetch(victim + path, Object.assign({method: 'POST', mode: 'no-cors', credentials: 'include'}, init));
  await send('/api/v2/chats', {body});
  await send('/api/v2/chats', {headers: {'Content-Type': 'text/plain'}, body});
  await send('/api/v2/chats', {headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'a=b'});
  await send('/api/v2/auth/login', {body: JSON.stringify({token: %[2]q})});
  document.querySelector('iframe').addEventListener('load', () => { document.title = 'done'; });
  document.getElementById('f').submit();
})();
</script>`

// sessionCookie is the browser's chatd session cookie for base ("" when none).
func (b *browser) sessionCookie() string {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
	require.NoError(b.t, err)
	for _, c := range res.Cookies {
		if c.Name == api.SessionCookie {
			return c.Value
		}
	}
	return ""
}

// A page of another origin on the same site cannot create chats with the
// visitor's session or log the visitor in; the UI's own requests still
// work in the same browser.
func TestBrowserRefusesCrossSiteRequests(t *testing.T) {
	b := startBrowser(t)
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.sidebar')`)
	session := b.sessionCookie()
	require.NotEmpty(t, session)

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackerPage, b.base, browserToken)
	}))
	defer attacker.Close()
	b.do(chromedp.Navigate(attacker.URL))
	b.waitJS("the attacker's requests answered", `document.title === 'done'`)

	chats, err := b.api.ListChats(b.ctx, sdk.ListChatsOptions{})
	require.NoError(t, err)
	require.Empty(t, chats, "no forged request created a chat")
	require.Equal(t, session, b.sessionCookie(), "the forged login set no new session")

	// Login CSRF proper: a visitor without a session is not logged in
	// to the account the page chose.
	_, err = chromedp.Call(b.ctx, network.ClearBrowserCookies, cdp.Empty{})
	require.NoError(t, err)
	b.do(chromedp.Navigate(attacker.URL + "/again"))
	b.waitJS("the attacker's requests answered", `document.title === 'done'`)
	require.Empty(t, b.sessionCookie(), "the forged login set no session")

	// The same browser, on chatd's own page: JSON from its own origin.
	b.do(chromedp.Navigate(b.base + "/login#token=" + browserToken))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.sidebar')`)
	status := eval[float64](b, `fetch('/api/v2/chats', {method: 'POST', headers: {'Content-Type': 'application/json'},
		body: JSON.stringify({content: [{type: 'text', text: 'mine'}]})}).then(r => r.status)`)
	require.Equal(t, http.StatusCreated, int(status))
	status = eval[float64](b, `fetch('/api/v2/auth/login', {method: 'POST', headers: {'Content-Type': 'application/json'},
		body: JSON.stringify({token: '`+browserToken+`'})}).then(r => r.status)`)
	require.Equal(t, http.StatusOK, int(status))
}
