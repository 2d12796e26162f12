package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
)

// runLoginLink implements `chatd login-link`: a one-time login link for
// the web UI. Beside a running SQLite server it goes through the admin
// socket (the link then names the server's own address); otherwise, and
// with Postgres, the database is opened here.
func runLoginLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := tokenFlags("login-link", stderr)
	user := fs.String("user", auth.AdminName, "the user who logs in")
	base := fs.String("url", "", "the web UI's address in the link (default: the server's own, or http://CHATD_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("login-link: unexpected argument %q", fs.Arg(0))
	}
	return withAdmin(ctx, *db, func(c admin.Client) error {
		var res admin.LoginLinkResponse
		if err := c.Call(ctx, admin.CmdLoginLink, admin.LoginLinkRequest{User: *user}, &res); err != nil {
			return fmt.Errorf("login-link: %w", err)
		}
		url := res.URL
		if *base != "" {
			url = admin.LoginURL(*base, res.Code)
		}
		fmt.Fprintln(stdout, url)
		fmt.Fprintf(stderr, "login link for %q: works once, until %s\n", *user, res.ExpiresAt.UTC().Format(time.RFC3339))
		return nil
	})
}
