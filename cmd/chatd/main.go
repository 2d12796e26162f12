// Command chatd is a self-hosted, durable backend for AI agent chats.
//
//	chatd serve   [--addr 127.0.0.1:8080] [--db ./chatd.db | --db postgres://...] [--help: every setting]
//	chatd migrate [--db ...] up|down|status
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts the graceful drain (bounded by
	// CHATD_SHUTDOWN_TIMEOUT); a second one stops the process at once.
	unhook := context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	unhook()
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "chatd:", err)
	}
	os.Exit(exitCode(err))
}

// usageError is a bad flag or setting: the command did not start.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the process's exit status for run's error: 0 for none or a
// --help, 2 for a usage error (a bad flag or environment variable), 1
// for any other.
func exitCode(err error) int {
	var bad usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &bad):
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	return 1
}

const usage = `chatd: a durable backend for AI agent chats

Usage:
  chatd [serve] [--addr ADDR] [--db PATH|URL] ...
                                               serve the API and web UI (default; --help: every setting)
  chatd migrate [--db PATH|URL] up|down|status  manage the database schema
  chatd version (or --version)                 print the version, commit and Go version
  chatd token create --user NAME [--admin] [--label TEXT] [--expires DURATION]
                                               print a new API token for NAME
  chatd token list [--user NAME] [--json]      list tokens (never their secrets)
  chatd token revoke ID | --user NAME --all    revoke tokens at once
  chatd login-link [--user NAME] [--url URL]   print a one-time web UI login link (15 minutes)
  chatd invocation inspect --request-id UUID   show a durable request, its turn and tool journal
  chatd invocation reconcile --request-id UUID --review FILE.json
                                               record an operator's review of an unresolved request
  chatd copy --from SOURCE --to TARGET         copy a stopped database between SQLite and Postgres (verified)
  chatd backup --to FILE [--db PATH | --url URL --token TOKEN]
                                               snapshot a (running) SQLite server's database
  chatd restore --from FILE [--db PATH]        put a snapshot in place (no server may hold PATH)
  chatd bench [--db PATH|URL] [--seed-chats N] [--seed-messages M] [--duration D]
                                               measure throughput and latency against same-run baselines

chatd serve --help lists every setting with its flag, environment variable and default;
--db is CHATD_DB for every command.
Beside a running SQLite server, token and login-link commands go through its admin socket (PATH.sock).
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && (args[0][0] != '-' || args[0] == "--version" || args[0] == "-version") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, args, stdout, stderr)
	case "token":
		return runToken(ctx, args, stdout, stderr)
	case "invocation":
		return runInvocation(ctx, args, stdout, stderr)
	case "version", "--version", "-version":
		return runVersion(args, stdout)
	case "login-link":
		return runLoginLink(ctx, args, stdout, stderr)
	case "copy":
		return runCopy(ctx, args, stdout, stderr)
	case "backup":
		return runBackup(ctx, args, stdout, stderr)
	case "restore":
		return runRestore(ctx, args, stdout, stderr)
	case "bench":
		return runBench(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// envDefault returns the environment variable's value, or def.
func envDefault(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
