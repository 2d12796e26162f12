package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
)

const tokenUsage = `usage:
  chatd token create --user NAME [--admin] [--label TEXT] [--expires 720h|30d|RFC3339]
  chatd token list [--user NAME] [--json]
  chatd token revoke ID
  chatd token revoke --user NAME --all
each takes --db (CHATD_DB); beside a running SQLite server they go through its admin socket`

// runToken implements `chatd token create|list|revoke`. With a SQLite
// database a running server answers over its admin socket; otherwise the
// database is opened here. Both run the same admin commands.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", tokenUsage)
	}
	switch args[0] {
	case "create":
		return runTokenCreate(ctx, args[1:], stdout, stderr)
	case "list":
		return runTokenList(ctx, args[1:], stdout, stderr)
	case "revoke":
		return runTokenRevoke(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown token command %q\n%s", args[0], tokenUsage)
}

// tokenFlags is a flag set with --db.
func tokenFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", config.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	return fs, db
}

// withAdmin runs fn with the admin client for db.
func withAdmin(ctx context.Context, db string, fn func(admin.Client) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return usageError{err}
	}
	cfg.DB = db
	c, closeFn, err := app.OpenAdmin(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(c)
}

func runTokenCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := tokenFlags("token create", stderr)
	user := fs.String("user", "", "user name (created if it does not exist)")
	isAdmin := fs.Bool("admin", false, "make the user an admin (sees every chat)")
	label := fs.String("label", "cli", "a label to recognise the token by in `token list`")
	expires := fs.String("expires", "", "expire after a duration (720h, 30d) or at an RFC 3339 time; default never")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" {
		return fmt.Errorf("token create: --user is required")
	}
	in, err := parseExpires(*expires, time.Now())
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	return withAdmin(ctx, *db, func(c admin.Client) error {
		var res admin.TokenCreateResponse
		err := c.Call(ctx, admin.CmdTokenCreate, admin.TokenCreateRequest{User: *user, Admin: *isAdmin, Label: *label, ExpiresIn: in}, &res)
		if err != nil {
			return fmt.Errorf("token create: %w", err)
		}
		fmt.Fprintln(stdout, res.Token)
		role := "user"
		if res.Info.Admin {
			role = "admin"
		}
		until := "it does not expire"
		if res.Info.ExpiresAt != nil {
			until = "it expires " + res.Info.ExpiresAt.Format(time.RFC3339)
		}
		fmt.Fprintf(stderr, "created token %s for %s %q; %s; it is shown only once\n", res.Info.ID, role, res.Info.User, until)
		return nil
	})
}

// parseExpires reads --expires: "" (never), a Go duration, a number of
// days ("30d"), or an RFC 3339 time after now.
func parseExpires(v string, now time.Time) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("--expires %q: not a number of days", v)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else if at, err := time.Parse(time.RFC3339, v); err == nil {
		d = at.Sub(now)
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("--expires %q: want a duration (720h), days (30d) or an RFC 3339 time", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--expires %q: must be in the future", v)
	}
	return d, nil
}

func runTokenList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := tokenFlags("token list", stderr)
	user := fs.String("user", "", "only this user's tokens")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("token list: unexpected argument %q", fs.Arg(0))
	}
	return withAdmin(ctx, *db, func(c admin.Client) error {
		var res admin.TokenListResponse
		if err := c.Call(ctx, admin.CmdTokenList, admin.TokenListRequest{User: *user}, &res); err != nil {
			return fmt.Errorf("token list: %w", err)
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res.Tokens)
		}
		printTokens(stdout, res.Tokens)
		return nil
	})
}

// printTokens writes the table of `token list`: never a secret or hash.
func printTokens(w io.Writer, list []auth.TokenInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tKIND\tLABEL\tCREATED\tLAST USED\tEXPIRES")
	when := func(t *time.Time, none string) string {
		if t == nil {
			return none
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, t := range list {
		user := t.User
		if t.Admin {
			user += " (admin)"
		}
		expires := when(t.ExpiresAt, "never")
		if t.Expired {
			expires += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, user, t.Kind, t.Label,
			t.CreatedAt.UTC().Format(time.RFC3339), when(t.LastUsedAt, "never"), expires)
	}
	_ = tw.Flush()
}

func runTokenRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := tokenFlags("token revoke", stderr)
	user := fs.String("user", "", "with --all: the user whose tokens go")
	all := fs.Bool("all", false, "revoke every token of --user")
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	var req admin.TokenRevokeRequest
	switch {
	case id != "" && (*all || *user != ""):
		return fmt.Errorf("token revoke: give an ID, or --user NAME --all, not both")
	case id != "":
		parsed, err := uuid.Parse(id)
		if err != nil {
			return fmt.Errorf("token revoke: %q is not a token ID (see chatd token list)", id)
		}
		req.ID = parsed
	case *all && *user != "":
		req.User, req.All = *user, true
	default:
		return fmt.Errorf("token revoke: give an ID, or --user NAME --all")
	}
	return withAdmin(ctx, *db, func(c admin.Client) error {
		var res admin.TokenRevokeResponse
		if err := c.Call(ctx, admin.CmdTokenRevoke, req, &res); err != nil {
			return fmt.Errorf("token revoke: %w", err)
		}
		if res.Token != nil {
			fmt.Fprintf(stdout, "revoked token %s of %s (%s %q)\n", res.Token.ID, res.Token.User, res.Token.Kind, res.Token.Label)
			return nil
		}
		fmt.Fprintf(stdout, "revoked %d tokens of %s\n", res.Revoked, req.User)
		return nil
	})
}
