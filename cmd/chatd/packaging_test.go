package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Dockerfile builds the binary with exactly the command docs/operations.md
// documents, with the ldflag that sets this package's version, and runs a
// command this binary has; compose and the systemd unit set only settings
// docs/configuration.md documents.
func TestPackagingMatchesTheDocs(t *testing.T) {
	operations := readRepoFile(t, "docs/operations.md")
	configuration := readRepoFile(t, "docs/configuration.md")
	dockerfile := readRepoFile(t, "Dockerfile")

	build := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 .*go build .*)$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, build, "the Dockerfile's go build line")
	require.True(t, strings.Contains(operations, "\n"+build[1]+"\n"), "docs/operations.md documents the Dockerfile's build command %q", build[1])
	require.Contains(t, build[1], "-X main.version=", "the build sets the version")
	require.Contains(t, build[1], "./cmd/chatd")

	require.Regexp(t, `(?m)^USER [1-9][0-9]*`, dockerfile, "the image runs as a non-root user")
	require.Regexp(t, `(?m)^VOLUME /data$`, dockerfile)
	require.Regexp(t, `(?m)^FROM .* AS build$`, dockerfile, "multi-stage")
	cmd := regexp.MustCompile(`(?m)^CMD \["([a-z]+)"\]$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, cmd)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{cmd[1], "--help"}, &stdout, &stderr)
	require.NotContains(t, err.Error(), "unknown command", "the image's CMD is a chatd command")

	settings := regexp.MustCompile(`\b(CHATD_[A-Z_]+)\b`)
	for _, file := range []string{"Dockerfile", "compose.yaml", "deploy/chatd.service"} {
		for _, m := range settings.FindAllStringSubmatch(readRepoFile(t, file), -1) {
			require.True(t, strings.Contains(configuration, "`"+m[1]+"`"), "%s sets %s, which docs/configuration.md does not document", file, m[1])
		}
	}
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../" + name)
	require.NoError(t, err)
	return strings.ReplaceAll(string(data), "\r\n", "\n")
}

// TestPackageMapMatchesTheTree: docs/ARCHITECTURE.md's package map names
// every directory of Go code in the module (examples/ is not part of it)
// at the start of a line, and nothing that is not there.
func TestPackageMapMatchesTheTree(t *testing.T) {
	doc := readRepoFile(t, "docs/ARCHITECTURE.md")
	block := regexp.MustCompile("(?s)## Package map\n\n```\n(.*?)```\n").FindStringSubmatch(doc)
	require.NotNil(t, block, "docs/ARCHITECTURE.md has a package map")
	named := map[string]bool{}
	entry := regexp.MustCompile(`^((?:[a-z][a-z0-9]*/)+(?:, (?:[a-z][a-z0-9]*/)+)*) `)
	for _, line := range strings.Split(block[1], "\n") {
		if m := entry.FindStringSubmatch(line); m != nil {
			for _, dir := range strings.Split(m[1], ", ") {
				named[strings.TrimSuffix(dir, "/")] = true
			}
		}
	}
	code := map[string]bool{}
	root := filepath.Join("..", "..")
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == "examples" || rel == "artifacts" || (strings.HasPrefix(d.Name(), ".") && rel != ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			code[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	}))
	require.NotEmpty(t, code)
	for dir := range code {
		if dir == "." {
			continue
		}
		require.True(t, named[dir], "%s/ holds Go code but the package map in docs/ARCHITECTURE.md does not name it", dir)
	}
	for dir := range named {
		if dir == "docs" {
			continue
		}
		_, err := os.Stat(filepath.Join(root, dir))
		require.NoError(t, err, "the package map names %s/, which is not in the tree", dir)
	}
}
