// Package mcptest finds and starts the MCP reference servers published on
// npm for end-to-end tests.
//
// .ci/run installs them (or by hand: npm install --prefix DIR
// @modelcontextprotocol/server-everything@2026.8.31
// @modelcontextprotocol/server-filesystem@2026.8.31) into the npm prefix
// named by CHATD_TEST_MCP_DIR. Without it the tests that need them skip,
// except under CI=true, where they fail.
package mcptest

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Version is the version of the reference servers the tests run.
const Version = "2026.8.31"

// NPMServer is the dist/index.js of package pkg ("server-everything",
// "server-filesystem"), to be started as `node <index>`.
func NPMServer(t testing.TB, pkg string) string {
	t.Helper()
	dir := os.Getenv("CHATD_TEST_MCP_DIR")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CHATD_TEST_MCP_DIR is not set: .ci/run installs the npm MCP servers there")
		}
		t.Skip("CHATD_TEST_MCP_DIR not set (an npm prefix with the @modelcontextprotocol servers)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("CHATD_TEST_MCP_DIR is set but node is not on PATH: %v", err)
	}
	index := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	_, err := os.Stat(index)
	require.NoError(t, err, "install %s@%s into %s", pkg, Version, dir)
	return index
}

// StartNode runs `node index mode` (server-everything's "streamableHttp"
// or "sse") listening on a free port, waits until it says it listens, and
// returns its address (host:port). The process is killed at the end of
// the test.
func StartNode(t testing.TB, index, mode string) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command("node", index, mode)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PORT=" + strconv.Itoa(port)}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	drained := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "listening on port") || strings.Contains(lines.Text(), "running on port") {
			break
		}
	}
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, stderr)
	}()
	require.NoError(t, lines.Err())
	require.NotEmpty(t, seen, "node printed nothing")
	last := seen[len(seen)-1]
	require.True(t, strings.Contains(last, "port"), "node did not start: %s", strings.Join(seen, "\n"))
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
