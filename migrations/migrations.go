// Package migrations embeds the goose SQL migrations of each dialect.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// SQLite returns the SQLite migrations.
func SQLite() fs.FS { return sub("sqlite") }

// Postgres returns the PostgreSQL migrations.
func Postgres() fs.FS { return sub("postgres") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return f
}
