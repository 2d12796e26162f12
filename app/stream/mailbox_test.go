package stream

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailbox: hints coalesce to the newest snapshot; Gone wins; a wake-up
// is pending until taken.
func TestMailbox(t *testing.T) {
	t.Parallel()
	at := func(v int64) Hints { return Hints{SnapshotVersion: &v} }
	m := newMailbox()
	require.Nil(t, m.take())

	m.put(at(5))
	m.put(at(3))
	m.put(at(7))
	m.put(at(6))
	require.Len(t, m.wake, 1, "one wake-up for several hints")
	<-m.wake
	require.Equal(t, int64(7), *m.take().SnapshotVersion)
	require.Nil(t, m.take())

	m.put(at(8))
	m.put(Hints{Gone: true})
	m.put(at(9))
	require.True(t, m.take().Gone, "a vanished chat is checked whatever came after")
}
