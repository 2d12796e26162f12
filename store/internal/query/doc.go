// Package query holds the SQL that both drivers run unchanged, written once.
//
// Statements use PostgreSQL's numbered placeholders ($1, $2, …): pgx binds
// them natively and modernc.org/sqlite binds $NNN by ordinal, so one text
// serves both stores. A constant is named after the store method that runs it
// (UserGet is run by both drivers' UserGet), and a column list is in the order
// both drivers' scan function for that table reads it.
//
// A statement the engines spell differently (SQLite keeps uuids, times and
// JSON as text and reads JSON with json_each; Postgres has uuid[] arrays,
// FOR UPDATE and advisory locks) stays in its driver.
package query
