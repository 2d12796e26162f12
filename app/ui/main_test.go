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
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
