package modelconfig

import (
	"os"
	"path/filepath"
)

// keyFileSuffix names the SQLite key file after the database file.
const keyFileSuffix = ".secret-key"

// KeyFiles are where the SQLite key file of db may be: next to the
// database's real path (symlinks resolved, so every symlinked route finds
// the same file), then next to db itself when db is a symlink (where
// versions before this one put it).
func KeyFiles(db string) []string {
	abs, err := filepath.Abs(db)
	if err != nil {
		return []string{db + keyFileSuffix}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || real == abs {
		return []string{abs + keyFileSuffix}
	}
	return []string{real + keyFileSuffix, abs + keyFileSuffix}
}

// SecretKeyFile is the key file a start on the SQLite database db reads
// when CHATD_SECRET_KEY is unset: the first of KeyFiles that exists, else
// where a first start creates it.
func SecretKeyFile(db string) string {
	files := KeyFiles(db)
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return files[0]
}
