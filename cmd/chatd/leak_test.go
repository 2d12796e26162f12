package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, and
// removes the chatd binary the process tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// built is the chatd binary of this test run, built on first use.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// chatdBinary returns the path of a chatd binary built from this package,
// building it once for every test that runs the real process (each build
// links a large binary: minutes of CPU on a small CI machine when every
// test did its own).
func chatdBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "chatd-test-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "chatd")
		if out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	return built.path
}
