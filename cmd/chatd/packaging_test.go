package main

import (
	"bytes"
	"context"
	"os"
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
