package worker_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, and
// removes the chatd binary the kill -9 tests share (buildChatd).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chatd-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker tests: temp dir:", err)
		os.Exit(1)
	}
	chatdBuild.dir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}
