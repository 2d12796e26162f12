package mcp

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/tools"
)

// helperEnv, set through a server's configured env, makes the test binary
// a stdio MCP server (the child of the stdio tests) instead of running
// the tests.
const helperEnv = "CHATD_MCP_TEST_HELPER"

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runHelper serves, over stdin/stdout, "env" (the child's environment,
// one variable a line, sorted), "exit" (the process exits mid-call) and
// "pid".
func runHelper() {
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(env, "\n")}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "exit", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}

// anAdmin may use every server, whatever its access.
var anAdmin = tools.User{Name: "admin", Admin: true}
