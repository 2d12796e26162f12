package partbuf

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
)

// waitLimit bounds every wait of these tests; reaching it is a failure.
const waitLimit = 10 * time.Second

// fixture is what a test needs: a Buffer, its fake clock and an episode key.
type fixture struct {
	buf   *Buffer
	clock *clock.Fake
	ep    Episode
}

// setup returns a Buffer on a controlled clock, stopped at the end of the
// test, and a fresh episode key. mutate, if given, adjusts the config.
func setup(t *testing.T, mutate ...func(*Config)) fixture {
	t.Helper()
	c := clock.NewFake(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	cfg := Config{Clock: c}
	for _, m := range mutate {
		m(&cfg)
	}
	b := New(cfg)
	t.Cleanup(b.Stop)
	return fixture{buf: b, clock: c, ep: newKey()}
}

func newKey() Episode {
	return Episode{ChatID: uuid.New(), HistoryVersion: 7, GenerationAttempt: 1}
}

func text(s string) sdk.ChatMessagePart {
	return sdk.ChatMessagePart{Type: sdk.PartText, Text: s}
}

// drain reads ch until it is closed. It may run on any goroutine, so it
// reports a channel left open with Errorf.
func drain(t *testing.T, ch <-chan Part) []Part {
	t.Helper()
	var got []Part
	timeout := time.After(waitLimit)
	for {
		select {
		case p, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, p)
		case <-timeout:
			t.Errorf("channel not closed after %d parts", len(got))
			return got
		}
	}
}

// receive reads one part from ch, which must stay open.
// encodedPart is the Part a subscriber receives: with the content's JSON.
func encodedPart(t *testing.T, seq int64, c sdk.ChatMessagePart) Part {
	t.Helper()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return Part{Seq: seq, Content: c, JSON: b}
}

func receive(t *testing.T, ch <-chan Part) Part {
	t.Helper()
	select {
	case p, ok := <-ch:
		require.True(t, ok, "channel closed")
		return p
	case <-time.After(waitLimit):
		t.Fatal("no part received")
		return Part{}
	}
}

func requireClosed(t *testing.T, ch <-chan Part) {
	t.Helper()
	select {
	case p, ok := <-ch:
		require.False(t, ok, "received part %d instead of close", p.Seq)
	case <-time.After(waitLimit):
		t.Fatal("channel not closed")
	}
}

func texts(parts []Part) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Content.Text
	}
	return out
}

func requireSeqs(t *testing.T, parts []Part, n int) {
	t.Helper()
	require.Len(t, parts, n)
	for i, p := range parts {
		require.Equal(t, int64(i+1), p.Seq)
	}
}

func addTexts(t *testing.T, b *Buffer, ep Episode, ss ...string) {
	t.Helper()
	for _, s := range ss {
		require.NoError(t, b.AddPart(ep, text(s)))
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	b := New(Config{})
	require.Equal(t, DefaultMaxBytes, b.cfg.MaxBytes)
	require.Equal(t, 1<<20, b.cfg.MaxBytes)
	require.Equal(t, 15*time.Second, b.cfg.CollectAfter)
	require.Equal(t, 10*time.Second, b.cfg.SubscriberTimeout)
	require.Equal(t, DefaultCollectInterval, b.cfg.CollectInterval)
	require.Equal(t, clock.Real{}, b.cfg.Clock)
}

func TestCreateEpisode(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	require.NoError(t, b.CreateEpisode(s.ep))
	err := b.CreateEpisode(s.ep)
	require.ErrorIs(t, err, ErrEpisodeExists)
	require.ErrorContains(t, err, s.ep.String())

	parts, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.Empty(t, parts)

	// Each component of the key makes a distinct episode.
	for _, other := range []Episode{
		{ChatID: uuid.New(), HistoryVersion: s.ep.HistoryVersion, GenerationAttempt: s.ep.GenerationAttempt},
		{ChatID: s.ep.ChatID, HistoryVersion: s.ep.HistoryVersion + 1, GenerationAttempt: s.ep.GenerationAttempt},
		{ChatID: s.ep.ChatID, HistoryVersion: s.ep.HistoryVersion, GenerationAttempt: s.ep.GenerationAttempt + 1},
	} {
		require.NoError(t, b.CreateEpisode(other))
	}

	b.CloseEpisode(s.ep)
	require.ErrorIs(t, b.CreateEpisode(s.ep), ErrEpisodeExists)
}

func TestCloseEpisode(t *testing.T) {
	t.Parallel()

	t.Run("stops parts and is idempotent", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		b := s.buf
		require.NoError(t, b.CreateEpisode(s.ep))
		addTexts(t, b, s.ep, "a")
		b.CloseEpisode(s.ep)
		require.ErrorIs(t, b.AddPart(s.ep, text("b")), ErrEpisodeClosed)

		// A second close neither fails nor moves the close instant.
		s.clock.Advance(10 * time.Second)
		b.CloseEpisode(s.ep)
		s.clock.Advance(5 * time.Second)
		require.Equal(t, 1, b.Collect(s.clock.Now()))
	})

	t.Run("unknown episode is created closed", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		b := s.buf
		b.CloseEpisode(s.ep)
		parts, err := b.GetParts(s.ep)
		require.NoError(t, err)
		require.Empty(t, parts)
		require.ErrorIs(t, b.AddPart(s.ep, text("late")), ErrEpisodeClosed)
		// The generation goroutine losing the race learns it from create.
		require.ErrorIs(t, b.CreateEpisode(s.ep), ErrEpisodeExists)
	})
}

func TestAddPart(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	err := b.AddPart(s.ep, text("early"))
	require.ErrorIs(t, err, ErrEpisodeNotFound)
	require.ErrorContains(t, err, s.ep.String())

	require.NoError(t, b.CreateEpisode(s.ep))
	addTexts(t, b, s.ep, "a", "b", "c")
	parts, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{text("a"), text("b"), text("c")}, parts)

	// Invalid JSON cannot be measured, so it is refused.
	err = b.AddPart(s.ep, sdk.ChatMessagePart{Type: sdk.PartToolCall, Args: json.RawMessage("{")})
	require.Error(t, err)
	parts, err = b.GetParts(s.ep)
	require.NoError(t, err)
	require.Len(t, parts, 3)

	b.CloseEpisode(s.ep)
	require.ErrorIs(t, b.AddPart(s.ep, text("d")), ErrEpisodeClosed)
}

func TestAddPartCap(t *testing.T) {
	t.Parallel()

	// sized returns a text part whose JSON encoding is n bytes.
	sized := func(t *testing.T, n int) sdk.ChatMessagePart {
		overhead, err := json.Marshal(text("x"))
		require.NoError(t, err)
		p := text(strings.Repeat("x", n-len(overhead)+1))
		encoded, err := json.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, n, len(encoded))
		return p
	}

	t.Run("1 MiB by default, exactly", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		b := s.buf
		require.NoError(t, b.CreateEpisode(s.ep))
		const chunk = 64 << 10
		for range (1 << 20) / chunk {
			require.NoError(t, b.AddPart(s.ep, sized(t, chunk)))
		}
		err := b.AddPart(s.ep, text(""))
		require.ErrorIs(t, err, ErrEpisodeFull)
		parts, err := b.GetParts(s.ep)
		require.NoError(t, err)
		require.Len(t, parts, 16)
	})

	t.Run("full is sticky", func(t *testing.T) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		s := setup(t, func(c *Config) { c.MaxBytes = 100; c.Registerer = reg })
		b := s.buf
		require.NoError(t, b.CreateEpisode(s.ep))
		require.NoError(t, b.AddPart(s.ep, sized(t, 60)))
		require.ErrorIs(t, b.AddPart(s.ep, sized(t, 41)), ErrEpisodeFull)
		// It would fit, but accepting it would leave a hole in the response.
		require.ErrorIs(t, b.AddPart(s.ep, sized(t, 40)), ErrEpisodeFull)
		require.Equal(t, 2.0, testutil.ToFloat64(b.fullDrops), "both refused parts are drops")
		require.Zero(t, testutil.ToFloat64(b.slowDrops))
		parts, err := b.GetParts(s.ep)
		require.NoError(t, err)
		require.Len(t, parts, 1)

		b.CloseEpisode(s.ep)
		require.ErrorIs(t, b.AddPart(s.ep, text("")), ErrEpisodeClosed)
	})

	t.Run("a single part larger than the cap", func(t *testing.T) {
		t.Parallel()
		s := setup(t, func(c *Config) { c.MaxBytes = 100 })
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		require.ErrorIs(t, s.buf.AddPart(s.ep, sized(t, 101)), ErrEpisodeFull)
	})

	t.Run("episodes are capped separately", func(t *testing.T) {
		t.Parallel()
		s := setup(t, func(c *Config) { c.MaxBytes = 100 })
		other := newKey()
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		require.NoError(t, s.buf.CreateEpisode(other))
		require.NoError(t, s.buf.AddPart(s.ep, sized(t, 100)))
		require.NoError(t, s.buf.AddPart(other, sized(t, 100)))
	})
}

func TestGetParts(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	_, err := b.GetParts(s.ep)
	require.ErrorIs(t, err, ErrEpisodeNotFound)

	require.NoError(t, b.CreateEpisode(s.ep))
	id := uuid.New()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	in := sdk.ChatMessagePart{
		Type:       sdk.PartToolCall,
		ToolCallID: "call-1",
		Args:       json.RawMessage(`{"a":1}`),
		Result:     json.RawMessage(`"ok"`),
		FileID:     &id,
		CreatedAt:  &at,
	}
	want := in
	want.Args = json.RawMessage(`{"a":1}`)
	want.Result = json.RawMessage(`"ok"`)
	want.FileID = new(id)
	want.CreatedAt = new(at)
	require.NoError(t, b.AddPart(s.ep, in))

	// The buffer does not share memory with the caller who added the part...
	in.Args[1] = 'X'
	in.Result[1] = 'X'
	*in.FileID = uuid.Nil
	*in.CreatedAt = time.Time{}
	parts, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{want}, parts)

	// ...nor with the caller who read it.
	parts[0].Args[1] = 'Y'
	*parts[0].FileID = uuid.Nil
	parts[0] = text("overwritten")
	again, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{want}, again)

	// Closed episodes stay readable until collected.
	b.CloseEpisode(s.ep)
	again, err = b.GetParts(s.ep)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{want}, again)
}

func TestModelInvocation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	require.True(t, b.ModelInvokedAt(s.ep).IsZero())
	require.ErrorIs(t, b.StartModelInvocation(s.ep), ErrEpisodeNotFound)

	require.NoError(t, b.CreateEpisode(s.ep))
	require.True(t, b.ModelInvokedAt(s.ep).IsZero(), "never stamped")

	invoked := s.clock.Now()
	require.NoError(t, b.StartModelInvocation(s.ep))
	s.clock.Advance(time.Second)
	require.NoError(t, b.StartModelInvocation(s.ep))
	require.Equal(t, invoked, b.ModelInvokedAt(s.ep), "the first stamp is kept")

	// The interrupt goroutine's order: read, close, read parts.
	s.clock.Advance(2 * time.Second)
	require.Equal(t, invoked, b.ModelInvokedAt(s.ep))
	b.CloseEpisode(s.ep)
	_, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.ErrorIs(t, b.StartModelInvocation(s.ep), ErrEpisodeClosed)

	// Unknown again once collected.
	s.clock.Advance(DefaultCollectAfter)
	require.Equal(t, 1, b.Collect(s.clock.Now()))
	require.True(t, b.ModelInvokedAt(s.ep).IsZero())
}

func TestToolTimings(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf
	t0 := s.clock.Now()

	require.ErrorIs(t, b.RecordToolStart(s.ep, 0, t0), ErrEpisodeNotFound)
	require.ErrorIs(t, b.RecordToolCompletion(s.ep, 0, t0), ErrEpisodeNotFound)
	_, err := b.ToolCompletions(s.ep)
	require.ErrorIs(t, err, ErrEpisodeNotFound)

	require.NoError(t, b.CreateEpisode(s.ep))
	got, err := b.ToolCompletions(s.ep)
	require.NoError(t, err)
	require.Empty(t, got)

	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	require.NoError(t, b.RecordToolStart(s.ep, 2, at(1)))
	require.NoError(t, b.RecordToolStart(s.ep, 0, at(1)))
	require.NoError(t, b.RecordToolStart(s.ep, 1, at(2)))
	require.NoError(t, b.RecordToolCompletion(s.ep, 1, at(3)))
	require.NoError(t, b.RecordToolCompletion(s.ep, 0, at(4)))
	require.NoError(t, b.RecordToolCompletion(s.ep, 5, at(5))) // no start recorded

	got, err = b.ToolCompletions(s.ep)
	require.NoError(t, err)
	require.Equal(t, []ToolTiming{
		{CallIndex: 0, StartedAt: at(1), CompletedAt: at(4)},
		{CallIndex: 1, StartedAt: at(2), CompletedAt: at(3)},
		{CallIndex: 2, StartedAt: at(1)},
		{CallIndex: 5, CompletedAt: at(5)},
	}, got)

	// Closing freezes the record; it stays readable.
	b.CloseEpisode(s.ep)
	require.ErrorIs(t, b.RecordToolCompletion(s.ep, 2, at(6)), ErrEpisodeClosed)
	require.ErrorIs(t, b.RecordToolStart(s.ep, 3, at(6)), ErrEpisodeClosed)
	again, err := b.ToolCompletions(s.ep)
	require.NoError(t, err)
	require.Equal(t, got, again)
}

func TestSubscribeLive(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf
	require.NoError(t, b.CreateEpisode(s.ep))
	addTexts(t, b, s.ep, "a", "b")

	ch, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
	defer cancel()
	require.Equal(t, encodedPart(t, 1, text("a")), receive(t, ch))
	require.Equal(t, encodedPart(t, 2, text("b")), receive(t, ch))

	// Live parts follow the buffered ones.
	addTexts(t, b, s.ep, "c")
	require.Equal(t, encodedPart(t, 3, text("c")), receive(t, ch))
	addTexts(t, b, s.ep, "d", "e")
	b.CloseEpisode(s.ep)
	rest := drain(t, ch)
	require.Equal(t, []Part{encodedPart(t, 4, text("d")), encodedPart(t, 5, text("e"))}, rest)
}

func TestSubscribeBeforeCreate(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	ch, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
	defer cancel()

	// Waiting subscribers do not make the episode exist.
	_, err := b.GetParts(s.ep)
	require.ErrorIs(t, err, ErrEpisodeNotFound)
	require.ErrorIs(t, b.AddPart(s.ep, text("x")), ErrEpisodeNotFound)
	require.ErrorIs(t, b.StartModelInvocation(s.ep), ErrEpisodeNotFound)
	_, err = b.ToolCompletions(s.ep)
	require.ErrorIs(t, err, ErrEpisodeNotFound)

	require.NoError(t, b.CreateEpisode(s.ep))
	addTexts(t, b, s.ep, "a", "b", "c")
	b.CloseEpisode(s.ep)
	got := drain(t, ch)
	requireSeqs(t, got, 3)
	require.Equal(t, []string{"a", "b", "c"}, texts(got))
}

func TestSubscribeBeforeCloseOfUnknownEpisode(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ch, cancel := s.buf.SubscribeToEpisode(t.Context(), s.ep)
	defer cancel()
	s.buf.CloseEpisode(s.ep)
	require.Empty(t, drain(t, ch))
}

func TestSubscribeAfterClose(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf
	require.NoError(t, b.CreateEpisode(s.ep))
	addTexts(t, b, s.ep, "a", "b", "c")
	b.CloseEpisode(s.ep)

	ch, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
	defer cancel()
	got := drain(t, ch)
	requireSeqs(t, got, 3)
	require.Equal(t, []string{"a", "b", "c"}, texts(got))
}

func TestSubscribersSeeTheSameSequence(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf

	const subscribers, parts = 8, 500
	results := make([][]Part, subscribers)
	var wg sync.WaitGroup
	subscribe := func(i int) {
		ch, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
		t.Cleanup(cancel)
		wg.Go(func() { results[i] = drain(t, ch) })
	}
	// Some before create, some midway, some after close.
	for i := range subscribers / 2 {
		subscribe(i)
	}
	require.NoError(t, b.CreateEpisode(s.ep))
	for i := range parts {
		addTexts(t, b, s.ep, fmt.Sprint(i))
		if i == parts/2 {
			subscribe(subscribers / 2)
		}
	}
	b.CloseEpisode(s.ep)
	for i := subscribers/2 + 1; i < subscribers; i++ {
		subscribe(i)
	}
	wg.Wait()

	requireSeqs(t, results[0], parts)
	for i := 1; i < subscribers; i++ {
		require.Equal(t, results[0], results[i], "subscriber %d", i)
	}
}

func TestSubscribeCancel(t *testing.T) {
	t.Parallel()

	t.Run("cancel func", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		ch, cancel := s.buf.SubscribeToEpisode(t.Context(), s.ep)
		cancel()
		requireClosed(t, ch)
		cancel() // idempotent
		// The placeholder for the waiting subscriber is gone.
		require.Empty(t, s.buf.episodes)
	})

	t.Run("context", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		addTexts(t, s.buf, s.ep, "a")
		ctx, cancelCtx := context.WithCancel(t.Context())
		ch, cancel := s.buf.SubscribeToEpisode(ctx, s.ep)
		defer cancel()
		require.Equal(t, int64(1), receive(t, ch).Seq)
		cancelCtx()
		requireClosed(t, ch)
	})

	t.Run("while a send is blocked", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		require.NoError(t, s.buf.CreateEpisode(s.ep))
		addTexts(t, s.buf, s.ep, "never read")
		ch, cancel := s.buf.SubscribeToEpisode(t.Context(), s.ep)
		cancel()
		requireClosed(t, ch)
		// The episode no longer counts the subscriber.
		s.buf.CloseEpisode(s.ep)
		s.clock.Advance(DefaultCollectAfter)
		require.Equal(t, 1, s.buf.Collect(s.clock.Now()))
	})

	t.Run("after stop", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		s.buf.Stop()
		ch, cancel := s.buf.SubscribeToEpisode(t.Context(), s.ep)
		requireClosed(t, ch)
		cancel()
		require.Empty(t, s.buf.episodes)
	})
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	const timeout = time.Minute
	reg := prometheus.NewRegistry()
	s := setup(t, func(c *Config) { c.SubscriberTimeout = timeout; c.Registerer = reg })
	b := s.buf
	dropped := make(chan Episode, 1)
	b.onSlowDrop = func(ep Episode) { dropped <- ep }

	require.NoError(t, b.CreateEpisode(s.ep))
	slow, cancelSlow := b.SubscribeToEpisode(t.Context(), s.ep)
	defer cancelSlow()
	addTexts(t, b, s.ep, "a", "b")
	require.Equal(t, int64(1), receive(t, slow).Seq)
	// The slow subscriber never takes part 2: its send waits on a timer,
	// the only one on the clock so far.
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	require.NoError(t, s.clock.BlockUntil(ctx, 1))

	// A fast subscriber has taken everything when the timeout passes, so
	// only the slow one is blocked in a send.
	fast, cancelFast := b.SubscribeToEpisode(t.Context(), s.ep)
	defer cancelFast()
	require.Equal(t, int64(1), receive(t, fast).Seq)
	require.Equal(t, int64(2), receive(t, fast).Seq)
	s.clock.Advance(timeout)
	select {
	case ep := <-dropped:
		require.Equal(t, s.ep, ep)
	case <-time.After(waitLimit):
		t.Fatal("slow subscriber not dropped")
	}
	requireClosed(t, slow)
	require.Equal(t, 1.0, testutil.ToFloat64(b.slowDrops), "counted")

	// The fast one keeps receiving.
	fastGot := make(chan []Part, 1)
	go func() { fastGot <- drain(t, fast) }()
	for i := range 100 {
		addTexts(t, b, s.ep, fmt.Sprint(i))
	}
	b.CloseEpisode(s.ep)
	requireSeqs(t, append([]Part{{Seq: 1}, {Seq: 2}}, <-fastGot...), 102) // drain bounds the wait
}

func TestAddPartDoesNotWaitForSubscribers(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf
	require.NoError(t, b.CreateEpisode(s.ep))
	// Subscribers that never read, with the default 10 s timeout: AddPart
	// would take far longer than waitLimit if it waited on any of them.
	for range 10 {
		_, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
		defer cancel()
	}
	for i := range 1000 {
		addTexts(t, b, s.ep, fmt.Sprint(i))
	}
	b.CloseEpisode(s.ep)
	parts, err := b.GetParts(s.ep)
	require.NoError(t, err)
	require.Len(t, parts, 1000)
}

func TestCollect(t *testing.T) {
	t.Parallel()

	t.Run("closed episodes after CollectAfter", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		b := s.buf
		open := newKey()
		require.NoError(t, b.CreateEpisode(open))
		require.NoError(t, b.CreateEpisode(s.ep))
		addTexts(t, b, s.ep, "a")
		b.CloseEpisode(s.ep)

		s.clock.Advance(DefaultCollectAfter - time.Nanosecond)
		require.Zero(t, b.Collect(s.clock.Now()))
		_, err := b.GetParts(s.ep)
		require.NoError(t, err)

		s.clock.Advance(time.Nanosecond)
		require.Equal(t, 1, b.Collect(s.clock.Now()))
		_, err = b.GetParts(s.ep)
		require.ErrorIs(t, err, ErrEpisodeNotFound)

		// Open episodes are never collected.
		s.clock.Advance(24 * time.Hour)
		require.Zero(t, b.Collect(s.clock.Now()))
		_, err = b.GetParts(open)
		require.NoError(t, err)

		// A collected episode may be created again.
		require.NoError(t, b.CreateEpisode(s.ep))
	})

	t.Run("configured CollectAfter", func(t *testing.T) {
		t.Parallel()
		s := setup(t, func(c *Config) { c.CollectAfter = time.Minute })
		s.buf.CloseEpisode(s.ep)
		s.clock.Advance(59 * time.Second)
		require.Zero(t, s.buf.Collect(s.clock.Now()))
		s.clock.Advance(time.Second)
		require.Equal(t, 1, s.buf.Collect(s.clock.Now()))
	})

	t.Run("not while subscribed", func(t *testing.T) {
		t.Parallel()
		// The subscriber's blocked send must outlast the hour the clock
		// moves, or its timeout drops it first.
		s := setup(t, func(c *Config) { c.SubscriberTimeout = 2 * time.Hour })
		b := s.buf
		require.NoError(t, b.CreateEpisode(s.ep))
		addTexts(t, b, s.ep, "a", "b")
		b.CloseEpisode(s.ep)
		ch, cancel := b.SubscribeToEpisode(t.Context(), s.ep)
		defer cancel()
		require.Equal(t, int64(1), receive(t, ch).Seq)

		s.clock.Advance(time.Hour)
		require.Zero(t, b.Collect(s.clock.Now()))
		_, err := b.GetParts(s.ep)
		require.NoError(t, err)

		// Once the subscription has delivered everything, it no longer holds
		// the episode.
		require.Equal(t, []Part{encodedPart(t, 2, text("b"))}, drain(t, ch))
		require.Equal(t, 1, b.Collect(s.clock.Now()))
	})

	t.Run("not waiting subscribers", func(t *testing.T) {
		t.Parallel()
		s := setup(t)
		ch, cancel := s.buf.SubscribeToEpisode(t.Context(), s.ep)
		s.clock.Advance(time.Hour)
		require.Zero(t, s.buf.Collect(s.clock.Now()))
		cancel()
		requireClosed(t, ch)
		require.Empty(t, s.buf.episodes)
	})
}

func TestCollectLoop(t *testing.T) {
	t.Parallel()
	s := setup(t)
	b := s.buf
	collected := make(chan int, 1)
	b.afterCollect = func(n int) {
		select {
		case collected <- n:
		default:
		}
	}
	b.CloseEpisode(s.ep)
	s.clock.Advance(DefaultCollectAfter)
	require.NoError(t, b.Start(t.Context()))
	require.Error(t, b.Start(t.Context()), "second start")

	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	require.NoError(t, s.clock.BlockUntil(ctx, 1), "the loop's ticker")
	s.clock.Advance(DefaultCollectInterval - time.Nanosecond)
	select {
	case <-collected:
		t.Fatal("collected before the interval passed")
	default:
	}
	s.clock.Advance(time.Nanosecond)
	select {
	case removed := <-collected:
		require.Equal(t, 1, removed)
	case <-ctx.Done():
		t.Fatal("episode not collected")
	}
	_, err := b.GetParts(s.ep)
	require.ErrorIs(t, err, ErrEpisodeNotFound)

	b.Stop()
	b.Stop()
	require.Error(t, b.Start(t.Context()), "start after stop")
}

func TestCollectLoopEndsWithContext(t *testing.T) {
	t.Parallel()
	b := New(Config{})
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, b.Start(ctx))
	cancel()
	b.Stop() // returns: the loop exited on its own or on Stop
}

// TestStopLeavesNoGoroutines is not parallel: it counts the process's
// goroutines.
func TestStopLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()

	b := New(Config{})
	require.NoError(t, b.Start(t.Context()))
	open, closed := newKey(), newKey()
	require.NoError(t, b.CreateEpisode(open))
	addTexts(t, b, open, "a", "b")
	require.NoError(t, b.CreateEpisode(closed))
	addTexts(t, b, closed, "a")
	b.CloseEpisode(closed)

	var chans []<-chan Part
	for _, ep := range []Episode{open, closed, newKey()} { // blocked sending, blocked sending, waiting
		ch, _ := b.SubscribeToEpisode(context.Background(), ep)
		chans = append(chans, ch)
	}
	idle, _ := b.SubscribeToEpisode(context.Background(), open)
	require.Equal(t, int64(1), receive(t, idle).Seq)
	require.Equal(t, int64(2), receive(t, idle).Seq)
	chans = append(chans, idle) // waiting for a live part
	require.Greater(t, runtime.NumGoroutine(), before)

	b.Stop()
	for _, ch := range chans {
		requireClosed(t, ch)
	}
	// Stop waited for every goroutine to finish; give the runtime the moment
	// it needs to retire them. (Not require.Eventually: it polls from extra
	// goroutines.)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitLimit)
	for runtime.NumGoroutine() > before {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), stacks())
		}
	}
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// TestConcurrentUse exercises every method at once under the race detector.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := setup(t, func(c *Config) { c.MaxBytes = 4 << 10 })
	b := s.buf
	require.NoError(t, b.Start(t.Context()))

	const episodes, writers, readers = 4, 2, 3
	var wg sync.WaitGroup
	for range episodes {
		ep := newKey()
		var got [readers][]Part
		var readersWG sync.WaitGroup
		for r := range readers {
			ch, cancel := b.SubscribeToEpisode(t.Context(), ep)
			t.Cleanup(cancel)
			readersWG.Go(func() { got[r] = drain(t, ch) })
		}
		var writersWG sync.WaitGroup
		for w := range writers {
			writersWG.Go(func() {
				// Losing the create race or the close race is expected.
				_ = b.CreateEpisode(ep)
				_ = b.StartModelInvocation(ep)
				for i := range 300 {
					_ = b.AddPart(ep, text(fmt.Sprint(w, i)))
					_ = b.RecordToolStart(ep, i%5, s.clock.Now())
					_ = b.RecordToolCompletion(ep, i%5, s.clock.Now())
					_, _ = b.ToolCompletions(ep)
					_, _ = b.GetParts(ep)
					_ = b.ModelInvokedAt(ep)
					b.Collect(s.clock.Now())
				}
			})
		}
		wg.Go(func() {
			writersWG.Wait()
			b.CloseEpisode(ep)
			readersWG.Wait()
			parts, err := b.GetParts(ep)
			require.NoError(t, err)
			for r := range readers {
				requireSeqs(t, got[r], len(parts))
			}
		})
	}
	wg.Wait()
}
