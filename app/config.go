package app

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Defaults for Config's zero values.
const (
	DefaultAddr              = "127.0.0.1:8080"
	DefaultDB                = "./chatd.db"
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
)

// Config is everything chatd needs to start. Zero values take the Default
// constants; FromEnv fills it from CHATD_* variables.
type Config struct {
	// Addr is the HTTP listen address.
	Addr string
	// DB is a SQLite file path, or a postgres:// (postgresql://) URL.
	DB string
	// ShutdownTimeout bounds graceful HTTP shutdown.
	ShutdownTimeout time.Duration
}

// FromEnv returns a Config filled from the environment.
func FromEnv() Config {
	return Config{
		Addr: os.Getenv("CHATD_ADDR"),
		DB:   os.Getenv("CHATD_DB"),
	}
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.DB == "" {
		c.DB = DefaultDB
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c
}

// IsPostgres reports whether db names a PostgreSQL database.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// describeDB is the DB for logs, without credentials.
func describeDB(db string) string {
	if !IsPostgres(db) {
		return "sqlite " + db
	}
	if at := strings.LastIndex(db, "@"); at >= 0 {
		scheme := db[:strings.Index(db, "://")+3]
		return fmt.Sprintf("postgres %s***@%s", scheme, db[at+1:])
	}
	return "postgres " + db
}
