package ui_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/dbtest"
)

// A login link's one-time code signs the browser in and leaves the address
// bar; the same link again goes on to the app while the browser is signed
// in, and shows why it no longer works once it is not.
func TestBrowserLoginCode(t *testing.T) {
	chromiumPath(t) // skip (or fail in CI) before starting anything
	ctx := context.Background()
	a, err := app.NewWithStore(ctx, config.Config{BootstrapToken: browserToken, NoWorker: true}, dbtest.NewSQLite(t), io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	code, _, err := auth.New(a.Internals().Store, nil, nil, auth.Config{}).CreateLoginCode(ctx, auth.AdminName)
	require.NoError(t, err)

	b := openTab(t, srv.URL, &streamConns{})
	b.do(chromedp.Navigate(srv.URL + "/login#code=" + code))
	b.waitJS("the signed-in app", `location.pathname === '/' && document.querySelector('.sidebar')`)
	require.Empty(t, eval[string](b, `location.hash`), "the code must leave the address bar")

	// The used link again while this browser is signed in: the app, no error.
	b.do(chromedp.Navigate(srv.URL + "/"))
	b.waitJS("the app", `document.querySelector('.sidebar')`)
	b.do(chromedp.Navigate(srv.URL + "/login#code=" + code))
	b.waitJS("the app again, no error shown", `location.pathname === '/' && document.querySelector('.sidebar') && !document.querySelector('.form-error')?.textContent`)

	_, err = chromedp.Call(b.ctx, network.ClearBrowserCookies, cdp.Empty{})
	require.NoError(t, err)
	b.do(chromedp.Navigate(srv.URL + "/login#code=" + code))
	b.waitJS("the used link's error", `location.pathname === '/login' && /already used or expired/.test(document.querySelector('.form-error')?.textContent || '') && /chatd login-link/.test(document.querySelector('.form-error').textContent)`)
	require.Empty(t, eval[string](b, `location.hash`))
	b.checkNoProblems()
}
