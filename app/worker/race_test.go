//go:build race

package worker_test

// raceEnabled: the test binary runs with the race detector, so helper
// binaries are built with it too (they share the build cache).
const raceEnabled = true
