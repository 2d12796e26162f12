package dbcopy

import "strings"

// Table is one table the copy knows about.
type Table struct {
	// Name is the table's name, the same in both schemas.
	Name string
	// Skip, when not empty, says why the table is not copied (soft state
	// or bookkeeping each side owns); it must be empty on a copyable
	// source but is not compared.
	Skip string
	// Sequence names the column whose values come from a sequence (an
	// identity on Postgres, AUTOINCREMENT on SQLite); the target's
	// sequence is moved past the source's.
	Sequence string
	// SQLiteAutoincrement says SQLite keeps Sequence in sqlite_sequence
	// (tool_journal.seq is assigned MAX+1 by the store instead).
	SQLiteAutoincrement bool
}

// Tables lists every table of the chatd schema in foreign-key order: a
// table comes after every table it references. It is the one list the copy
// works from; a test fails when a migration adds a table missing here.
var Tables = []Table{
	{Name: "users"},
	{Name: "api_tokens"},
	{Name: "login_codes"},
	{Name: "ai_providers"},
	{Name: "model_configs"},
	{Name: "mcp_servers"},
	{Name: "mcp_oauth_tokens"},
	{Name: "mcp_user_oauth_tokens"},
	{Name: "projects"},
	{Name: "chats"}, // parents before children, see sortChats
	{Name: "chat_files"},
	{Name: "chat_system_prompts"},
	{Name: "chat_imports"},
	{Name: "chat_elicitations"},
	{Name: "schedules"},
	{Name: "schedule_runs"},
	{Name: "webhooks"},
	{Name: "webhook_deliveries", Sequence: "seq", SQLiteAutoincrement: true},
	{Name: "usage_records", Sequence: "id", SQLiteAutoincrement: true},
	{Name: "user_budgets"},
	{Name: "project_memories"},
	{Name: "chat_queued_messages", Sequence: "id", SQLiteAutoincrement: true},
	{Name: "chat_messages", Sequence: "id", SQLiteAutoincrement: true},
	{Name: "invocations"},
	{Name: "tool_journal", Sequence: "seq"},
	{Name: "chat_heartbeats", Skip: "leases are soft state: the copy refuses a source with live ones, stale ones mean nothing"},
	{Name: "chat_replicas", Skip: "replica records are soft state: every replica publishes its own on start"},
	{Name: "trigger_bypass", Skip: "SQLite trigger bookkeeping"},
}

// ignoredTables are present in a schema but not chatd's data.
var ignoredTables = map[string]bool{
	"goose_db_version": true, // each side's migration history
	"sqlite_sequence":  true, // SQLite's AUTOINCREMENT counters (carried per table)
}

// derivedTriggers name the SQLite triggers that keep derived tables (the
// label index chat_labels, the search tables chat_title_fts* and
// chat_message_fts*) in step with chats and messages. The copy leaves them
// on in a SQLite target, so those tables fill as the rows go in; Postgres
// derives the same from indexes (GIN), so there is nothing to copy.
var derivedTriggers = []string{"chat_labels_", "chat_title_fts_", "chat_message_fts_"}

// derivedTable: a SQLite table its triggers derive from copied rows (or an
// FTS5 shadow table of one), not data of its own.
func derivedTable(name string) bool {
	if name == "chat_labels" {
		return true
	}
	for _, prefix := range []string{"chat_title_fts", "chat_message_fts"} {
		if name == prefix || strings.HasPrefix(name, prefix+"_") {
			return true
		}
	}
	return false
}

// derivedTrigger: a trigger that keeps a derived table.
func derivedTrigger(name string) bool {
	for _, prefix := range derivedTriggers {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
