package ui_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain stops the shared Chromium after the tests, then fails the
// package if any goroutine outlives them.
func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	if code == 0 {
		// A large file's background gzip (ui.go, compressLarge) runs once
		// per process and may still be compressing Mermaid when the last
		// test ends; it ends by itself.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/chatd/chatd/app/ui.(*encoded).compressLarge")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
