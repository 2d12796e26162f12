package partbuf

// Follower reads an episode's parts without a goroutine or a channel of
// its own: a cursor into the episode's shared parts, for a reader that
// already has a loop (the stream endpoint's). Parts wait in the episode,
// so a follower that reads slowly holds up no one, the generating
// goroutine included. A Follower is used by one goroutine.
type Follower struct {
	b      *Buffer
	key    Episode
	e      *episode
	next   int
	closed bool
}

// Follow returns a follower of the episode, from its first part. If the
// episode does not exist yet, the follower waits for it. Close releases
// it; until then the episode is not collected.
func (b *Buffer) Follow(ep Episode) *Follower {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return &Follower{b: b, key: ep, closed: true}
	}
	e := b.episodes[ep]
	if e == nil {
		e = newEpisode()
		b.episodes[ep] = e
	}
	b.addSubscriber(e)
	return &Follower{b: b, key: ep, e: e}
}

// Episode is the episode followed.
func (f *Follower) Episode() Episode { return f.key }

// Next returns the parts added since the last call, in order, and a
// channel closed once more may be there (a part added, the episode
// closed, the Buffer stopped). done reports that no part will come: the
// episode is closed and every part was returned, the Buffer stopped, or
// the follower was closed; wake is nil then. The parts are shared with
// every other reader: they must not be modified.
func (f *Follower) Next() (parts []Part, wake <-chan struct{}, done bool) {
	if f.closed {
		return nil, nil, true
	}
	select {
	case <-f.b.done:
		return nil, nil, true
	default:
	}
	parts, closed, wake := f.e.read(f.next)
	f.next += len(parts)
	if closed {
		if len(parts) == 0 {
			return nil, nil, true
		}
		return parts, closedChan, false // the next call reports done
	}
	return parts, wake, false
}

// closedChan is a wake channel that never blocks.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Close releases the follower; it is idempotent.
func (f *Follower) Close() {
	if f.closed {
		return
	}
	f.closed = true
	if f.e != nil {
		f.b.unsubscribe(f.key, f.e)
	}
}
