package sqlite

import (
	"database/sql/driver"
	"strings"

	"modernc.org/sqlite"
)

// SQLite's LIKE and lower() fold ASCII only. chatd_fold lowers with Go's
// Unicode rules so a title search for "ärger" finds "Ärger", as on Postgres.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("chatd_fold", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return strings.ToLower(v), nil
			case []byte:
				return strings.ToLower(string(v)), nil
			}
			return args[0], nil
		})
}
