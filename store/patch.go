package store

// Assignment is one column an update writes and the value it writes there.
// Every patch type lists its set fields as assignments in one place (its
// Assignments method), so the SQLite and Postgres stores only encode them:
// placeholders and value conversion are theirs, the column list is not.
//
// Value is always one of a closed set of Go types, which each store knows
// how to encode: string, int64, bool, time.Time, *time.Time (nil writes
// NULL), *int64 (nil writes NULL), uuid.NullUUID, json.RawMessage (nil
// writes NULL), map[string]string (a JSON object; nil writes {}) and
// []uuid.UUID (a list of ids; nil writes NULL, empty an empty list). Named
// string types (ChatStatus, TitleSource, ...) are handed over as string.
type Assignment struct {
	Column string
	Value  any
}

// set appends column = o.Value when o is set.
func set[T any](as []Assignment, column string, o Opt[T]) []Assignment {
	if !o.Set {
		return as
	}
	return append(as, Assignment{Column: column, Value: o.Value})
}

// setText is set for string-kinded fields: the value goes out as a plain
// string, whatever named type the field has.
func setText[S ~string](as []Assignment, column string, o Opt[S]) []Assignment {
	if !o.Set {
		return as
	}
	return append(as, Assignment{Column: column, Value: string(o.Value)})
}

// Assignments lists the chats columns p writes, in a fixed order; empty
// when no field is set.
func (p ChatPatch) Assignments() []Assignment {
	var as []Assignment
	as = setText(as, "status", p.Status)
	as = set(as, "archived", p.Archived)
	as = set(as, "worker_id", p.WorkerID)
	as = set(as, "runner_id", p.RunnerID)
	as = set(as, "last_error", p.LastError)
	as = set(as, "retry_state", p.RetryState)
	as = set(as, "requires_action_deadline_at", p.RequiresActionDeadlineAt)
	as = set(as, "compaction_requested_at", p.CompactionRequestedAt)
	as = set(as, "title", p.Title)
	as = setText(as, "title_source", p.TitleSource)
	as = set(as, "title_updated_at", p.TitleUpdatedAt)
	as = set(as, "labels", p.Labels)
	as = set(as, "pin_order", p.PinOrder)
	as = set(as, "last_model_config_id", p.LastModelConfigID)
	as = set(as, "last_reasoning_effort", p.LastReasoningEffort)
	as = set(as, "mcp_server_ids", p.MCPServerIDs)
	as = set(as, "tool_approval", p.ToolApproval)
	as = set(as, "tool_approvals", p.ToolApprovals)
	as = set(as, "updated_at", p.UpdatedAt)
	as = set(as, "project_id", p.ProjectID)
	return as
}

// Assignments lists the chat_messages columns p writes, in a fixed order;
// empty when no field is set.
func (p MessagePatch) Assignments() []Assignment {
	var as []Assignment
	as = set(as, "content", p.Content)
	as = setText(as, "visibility", p.Visibility)
	as = set(as, "compressed", p.Compressed)
	as = set(as, "deleted", p.Deleted)
	as = set(as, "model_config_id", p.ModelConfigID)
	as = set(as, "reasoning_effort", p.ReasoningEffort)
	return as
}

// Assignments lists the invocations columns p writes, in a fixed order.
// updated_at is always first: every update of a claim records its time.
func (p InvocationPatch) Assignments() []Assignment {
	as := []Assignment{{Column: "updated_at", Value: p.UpdatedAt}}
	as = setText(as, "state", p.State)
	as = set(as, "message_id", p.MessageID)
	as = set(as, "queued_message_id", p.QueuedMessageID)
	as = set(as, "response", p.Response)
	as = set(as, "outcome", p.Outcome)
	as = set(as, "review", p.Review)
	as = set(as, "completed_at", p.CompletedAt)
	return as
}

// Assignments lists the tool_journal columns p writes, in a fixed order;
// empty when no field is set.
func (p JournalPatch) Assignments() []Assignment {
	var as []Assignment
	as = setText(as, "state", p.State)
	as = set(as, "result", p.Result)
	as = set(as, "is_error", p.IsError)
	as = set(as, "attempts", p.Attempts)
	as = set(as, "started_at", p.StartedAt)
	as = set(as, "completed_at", p.CompletedAt)
	return as
}
