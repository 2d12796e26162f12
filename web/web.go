// Package web holds chatd's browser UI: plain HTML, CSS and ES modules in
// static/, embedded in the binary so `go run ./cmd/chatd` serves it with no
// build step. app/ui serves these files; README.md maps the modules.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Files returns the UI's files rooted at static/ (index.html at the top).
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // "static" is a constant, valid path: unreachable
	}
	return sub
}
