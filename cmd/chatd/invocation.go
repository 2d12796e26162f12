package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
)

const invocationUsage = `usage:
  chatd invocation inspect   (--request-id UUID | --chat ID --tool-call ID) [--db ...]
  chatd invocation reconcile (--request-id UUID | --chat ID --tool-call ID) --review FILE.json [--db ...]
--chat/--tool-call name a tool call of a turn sent without a request id; beside a running
SQLite server both go through its admin socket`

// runInvocation is `chatd invocation inspect|reconcile`: the admin
// commands invocation.inspect and invocation.reconcile, over a running
// SQLite server's admin socket or the database itself (app.OpenAdmin).
func runInvocation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "reconcile") {
		return fmt.Errorf("%s", invocationUsage)
	}
	action := args[0]
	fs := flag.NewFlagSet("invocation "+action, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", config.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	rawID := fs.String("request-id", "", "the request's UUID")
	rawChat := fs.String("chat", "", "the chat of a tool call sent without a request id")
	toolCall := fs.String("tool-call", "", "the tool call's id (with --chat)")
	reviewFile := fs.String("review", "", "reconcile: the operator's assessment (JSON: {assessment, result?, is_error?})")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var target admin.InvocationTarget
	switch {
	case *rawID != "" && (*rawChat != "" || *toolCall != ""):
		return fmt.Errorf("give --request-id, or --chat and --tool-call, not both")
	case *rawID != "":
		id, err := uuid.Parse(*rawID)
		if err != nil || id == uuid.Nil {
			return fmt.Errorf("--request-id must be a non-nil UUID")
		}
		target.RequestID = id
	case *rawChat != "" && *toolCall != "":
		id, err := uuid.Parse(*rawChat)
		if err != nil || id == uuid.Nil {
			return fmt.Errorf("--chat must be a non-nil UUID")
		}
		target.ChatID, target.ToolCallID = id, *toolCall
	default:
		return fmt.Errorf("give --request-id, or --chat and --tool-call\n%s", invocationUsage)
	}
	var review sdk.ReconcileRequest
	if action == "reconcile" {
		if *reviewFile == "" {
			return fmt.Errorf("reconcile needs --review FILE.json")
		}
		raw, err := os.ReadFile(*reviewFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &review); err != nil {
			return fmt.Errorf("read %s: %w", *reviewFile, err)
		}
		if err := review.Validate(); err != nil {
			return fmt.Errorf("%s: %w", *reviewFile, err)
		}
	}
	return withAdmin(ctx, *db, func(c admin.Client) error {
		if action == "inspect" {
			var in admin.Inspection
			if err := c.Call(ctx, admin.CmdInvocationInspect, target, &in); err != nil {
				return err
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(in)
		}
		var out sdk.ReconcileResponse
		if err := c.Call(ctx, admin.CmdInvocationReconcile, admin.InvocationReconcileRequest{InvocationTarget: target, Review: review}, &out); err != nil {
			return err
		}
		what := fmt.Sprintf("tool call %s of chat %s", target.ToolCallID, target.ChatID)
		if out.RequestID != nil {
			what = "request " + out.RequestID.String()
		}
		fmt.Fprintf(stdout, "reconciled %s (tool calls %v) via %s; it stays closed to execution and its chat continues\n", what, out.ToolCallIDs, c.Via())
		return nil
	})
}
