// Package bench measures chatd against baselines taken in the same run:
// turns per second next to the store's raw single-row commits, a
// sequential turn's overhead, the acquisition count's cost as chats grow,
// the stream bootstrap of a long chat next to the SQL that reads it, and
// the chat list's tail latency. `chatd bench` prints its Report.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
)

// Defaults keep a run to a few seconds.
const (
	DefaultDuration      = 2 * time.Second
	DefaultConcurrency   = 8
	DefaultSeedChats     = 2000
	DefaultSeedMessages  = 0
	DefaultHistory       = 1000
	DefaultSamples       = 10
	DefaultListSamples   = 40
	DefaultSeqTurns      = 20
	seedBatch            = 500
	benchTitle           = "bench"
	benchLabelKey        = "bench"
	benchLabelValue      = "seeded"
	bootstrapReadLimit   = 64 << 20
	maxTurnWait          = 30 * time.Second
	acquisitionSmallSeed = 100
)

// Config selects what a run measures. Zero values take the defaults.
type Config struct {
	// Duration is how long each throughput phase runs.
	Duration time.Duration
	// Concurrency is the number of chats taking turns at once.
	Concurrency int
	// SeedChats and SeedMessages size the generated data set: chats of
	// the bench user, and messages spread over them round-robin.
	SeedChats    int
	SeedMessages int
	// History is the message count of the chat whose stream bootstrap is
	// measured.
	History int
	// Samples is how many stream bootstraps and acquisition counts are
	// timed; ListSamples how many list requests per filter.
	Samples     int
	ListSamples int
	// SeqTurns is how many sequential turns one chat takes.
	SeqTurns int
	// Delivery sizes the token delivery figures (delivery.go).
	Delivery DeliveryConfig
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	def(&c.Concurrency, DefaultConcurrency)
	def(&c.SeedChats, DefaultSeedChats)
	def(&c.History, DefaultHistory)
	def(&c.Samples, DefaultSamples)
	def(&c.ListSamples, DefaultListSamples)
	def(&c.SeqTurns, DefaultSeqTurns)
	if c.SeedMessages < 0 {
		c.SeedMessages = 0
	}
	return c
}

// Report is what a run measured. Durations are per operation.
type Report struct {
	Store string

	// CommitsPerSec is the baseline: single-row write transactions.
	CommitsPerSec float64
	// TurnsPerSec: complete turns with the zero-latency demo model,
	// Concurrency chats at once.
	TurnsPerSec float64
	// TurnP50 / TurnP99: one chat, sequential, send to final status.
	TurnP50, TurnP99 time.Duration
	// CommitP50 is one baseline commit's median time.
	CommitP50 time.Duration
	// TurnBreakdown is where a sequential turn's time goes, per turn,
	// from chatd's own stage, store and HTTP histograms.
	TurnBreakdown []Cost

	// AcquireSmall / AcquireLarge: ChatCountOwned's median in a write
	// transaction at SmallChats and LargeChats chats.
	SmallChats, LargeChats     int
	AcquireSmall, AcquireLarge time.Duration

	// Bootstrap of a History-message chat: p50, p99, bytes sent; SQL is
	// the median time of the store reading the same messages.
	History                    int
	BootstrapP50, BootstrapP99 time.Duration
	BootstrapBytes             int
	BootstrapSQL               time.Duration
	// BootstrapLimitedP99 and BootstrapLimitedBytes: the same with
	// ?history_limit=100.
	BootstrapLimitedP99   time.Duration
	BootstrapLimitedBytes int

	// ListP99 per filter name, at LargeChats chats.
	ListP99 map[string]time.Duration

	// Delivery: token delivery, idle viewers, AddPart (delivery.go).
	Delivery DeliveryReport
}

// Write prints r as a table of figures and ratios.
func (r Report) Write(w io.Writer) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", a/b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "store: %s\n", r.Store)
	fmt.Fprintf(&b, "%-44s %-22s %-22s %s\n", "figure", "chatd", "baseline", "ratio")
	row := func(name, got, base, rat string) { fmt.Fprintf(&b, "%-44s %-22s %-22s %s\n", name, got, base, rat) }
	row("turns/s vs raw commits/s", fmt.Sprintf("%.1f turns/s", r.TurnsPerSec), fmt.Sprintf("%.0f commits/s", r.CommitsPerSec),
		ratio(r.TurnsPerSec, r.CommitsPerSec))
	row("sequential turn p50 (p99) vs one commit", ms(r.TurnP50)+" ("+ms(r.TurnP99)+")", ms(r.CommitP50),
		ratio(float64(r.TurnP50), float64(r.CommitP50)))
	row(fmt.Sprintf("ChatCountOwned at %d vs %d chats", r.LargeChats, r.SmallChats), ms(r.AcquireLarge), ms(r.AcquireSmall),
		ratio(float64(r.AcquireLarge), float64(r.AcquireSmall)))
	row(fmt.Sprintf("bootstrap %d msgs p50 vs its SQL", r.History), ms(r.BootstrapP50), ms(r.BootstrapSQL),
		ratio(float64(r.BootstrapP50), float64(r.BootstrapSQL)))
	row(fmt.Sprintf("bootstrap %d msgs p99, bytes", r.History), ms(r.BootstrapP99), fmt.Sprintf("%d B", r.BootstrapBytes), "")
	row("bootstrap ?history_limit=100 p99, bytes", ms(r.BootstrapLimitedP99), fmt.Sprintf("%d B", r.BootstrapLimitedBytes), "")
	names := make([]string, 0, len(r.ListP99))
	for n := range r.ListP99 {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		row(fmt.Sprintf("list p99 (%d chats): %s", r.LargeChats, n), ms(r.ListP99[n]), "", "")
	}
	r.Delivery.write(row)
	writeBreakdown(&b, r.TurnBreakdown)
	_, err := io.WriteString(w, b.String())
	return err
}

// benchToken is the bootstrap admin's token of the in-process server.
const benchToken = "chatd-bench-token-0123456789abcdef"

// Run measures s, an open, migrated store that the run may fill with
// data; storeName labels the report. Run closes s (through the app it
// builds over it, which also stops the store's pubsub).
func Run(ctx context.Context, s store.Store, storeName string, cfg Config) (r Report, err error) {
	cfg = cfg.withDefaults()
	r = Report{Store: storeName, History: cfg.History, ListP99: map[string]time.Duration{}}

	// The concurrent agent limit must not hold any of the Concurrency chats
	// back: the figure is about chats running at once, not about waiting
	// for a slot (the default limit, 5, would keep 3 of 8 chats waiting).
	acfg := config.Config{BootstrapToken: benchToken, DemoTokenDelay: demo.NoDelay}
	acfg.Worker.RootLimit = max(worker.DefaultRootLimit, cfg.Concurrency)
	env, stop, err := startApp(ctx, s, acfg)
	if err != nil {
		return r, err
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	env.cfg = cfg

	if r.CommitsPerSec, r.CommitP50, err = env.rawCommits(ctx); err != nil {
		return r, err
	}
	if r.TurnsPerSec, err = env.concurrentTurns(ctx); err != nil {
		return r, err
	}
	if r.TurnP50, r.TurnP99, r.TurnBreakdown, err = env.sequentialTurns(ctx); err != nil {
		return r, err
	}
	// Acquisition at a small table, then at the seeded one.
	n, err := env.chatCount(ctx)
	if err != nil {
		return r, err
	}
	if n < acquisitionSmallSeed {
		if err := env.seed(ctx, acquisitionSmallSeed-n, 0); err != nil {
			return r, err
		}
	}
	if r.SmallChats, err = env.chatCount(ctx); err != nil {
		return r, err
	}
	if r.AcquireSmall, err = env.acquisition(ctx); err != nil {
		return r, err
	}
	if err := env.seed(ctx, cfg.SeedChats, cfg.SeedMessages); err != nil {
		return r, err
	}
	if r.LargeChats, err = env.chatCount(ctx); err != nil {
		return r, err
	}
	if r.AcquireLarge, err = env.acquisition(ctx); err != nil {
		return r, err
	}
	if err := env.bootstrap(ctx, &r); err != nil {
		return r, err
	}
	if err := env.lists(ctx, r.ListP99); err != nil {
		return r, err
	}
	if r.Delivery, err = measureDelivery(ctx, s, env.client, cfg.Delivery); err != nil {
		return r, err
	}
	return r, nil
}

// startApp builds and starts an app over s with acfg, served by an
// in-process HTTP server, and returns an env whose client is the
// bootstrap admin's. stop stops it and closes the app (and so s).
func startApp(ctx context.Context, s store.Store, acfg config.Config) (e *runEnv, stop func() error, err error) {
	a, err := app.NewWithStore(ctx, acfg, s, io.Discard)
	if err != nil {
		return nil, nil, fmt.Errorf("build the app: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	srv := httptest.NewServer(a.Handler())
	a.SetAdvertiseURL(srv.URL)
	stop = func() error {
		a.Stop()
		cancel()
		srv.Close()
		if err := a.Close(); err != nil {
			return fmt.Errorf("close the app: %w", err)
		}
		return nil
	}
	if err := a.Start(runCtx); err != nil {
		_ = stop()
		return nil, nil, fmt.Errorf("start the app: %w", err)
	}
	client := sdk.New(srv.URL, benchToken)
	me, err := client.Me(ctx)
	if err != nil {
		_ = stop()
		return nil, nil, fmt.Errorf("bench user: %w", err)
	}
	return &runEnv{store: s, client: client, url: srv.URL, owner: me.ID}, stop, nil
}

type runEnv struct {
	cfg    Config
	store  store.Store
	client *sdk.Client
	url    string
	owner  uuid.UUID
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// rawCommits is the baseline: transactions that lock one chat and bump
// its snapshot_version, back to back for the run's duration.
func (e *runEnv) rawCommits(ctx context.Context) (perSec float64, p50 time.Duration, err error) {
	id := uuid.New()
	if err := e.store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.ChatInsert(ctx, store.ChatInsertParams{
			ID: id, OwnerID: e.owner, Title: benchTitle, TitleSource: store.TitleSourceUser,
			Status: store.ChatStatusWaiting, Now: time.Now(),
		})
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("raw commits: insert chat: %w", err)
	}
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < e.cfg.Duration {
		t0 := time.Now()
		if err := e.store.InTx(ctx, func(tx store.Tx) error {
			if _, err := tx.ChatLock(ctx, id); err != nil {
				return err
			}
			_, err := tx.ChatBumpSnapshot(ctx, id)
			return err
		}); err != nil {
			return 0, 0, fmt.Errorf("raw commit: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return float64(len(lat)) / time.Since(start).Seconds(), percentile(lat, 50), nil
}

// turner drives one chat's turns over its stream.
type turner struct {
	e    *runEnv
	chat uuid.UUID
	conn *websocket.Conn
}

func (e *runEnv) newTurner(ctx context.Context) (*turner, error) {
	chat, err := e.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
	if err != nil {
		return nil, fmt.Errorf("create chat: %w", err)
	}
	conn, err := e.dial(ctx, chat.ID, "")
	if err != nil {
		return nil, err
	}
	t := &turner{e: e, chat: chat.ID, conn: conn}
	// The bootstrap ends with preview_reset.
	if _, err := t.readUntil(ctx, func(ev sdk.ChatStreamEvent) bool { return ev.Type == sdk.StreamPreviewReset }); err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("bootstrap of chat %s: %w", chat.ID, err)
	}
	return t, nil
}

func (e *runEnv) dial(ctx context.Context, chat uuid.UUID, query string) (*websocket.Conn, error) {
	u := "ws" + strings.TrimPrefix(e.url, "http") + "/api/v2/chats/" + chat.String() + "/stream" + query
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + benchToken}},
	})
	if err != nil {
		return nil, fmt.Errorf("dial the stream of chat %s: %w", chat, err)
	}
	conn.SetReadLimit(bootstrapReadLimit)
	return conn, nil
}

// readUntil reads frames until done says so, returning the bytes read.
func (t *turner) readUntil(ctx context.Context, done func(sdk.ChatStreamEvent) bool) (int, error) {
	return t.readFrames(ctx, func(frame []sdk.ChatStreamEvent) bool {
		return slices.ContainsFunc(frame, done)
	})
}

// readFrames reads frames until done says so after a whole frame,
// returning the bytes read.
func (t *turner) readFrames(ctx context.Context, done func([]sdk.ChatStreamEvent) bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, maxTurnWait)
	defer cancel()
	n := 0
	for {
		_, data, err := t.conn.Read(ctx)
		if err != nil {
			return n, fmt.Errorf("read the stream: %w", err)
		}
		n += len(data)
		var frame []sdk.ChatStreamEvent
		if err := json.Unmarshal(data, &frame); err != nil {
			return n, fmt.Errorf("decode a frame: %w", err)
		}
		for _, ev := range frame {
			if ev.Type == sdk.StreamError && ev.Error != nil {
				return n, fmt.Errorf("stream error: %s", ev.Error.Message)
			}
		}
		if done(frame) {
			return n, nil
		}
	}
}

// turn sends a message and waits for the assistant's reply with the chat
// back in waiting. The stream sends a status only when it changed since
// its last sync, and a turn can start and finish between two syncs: then
// the reply comes with no status at all, and the chat is still waiting.
// So the status is the last one seen (waiting before the send), judged
// after each whole frame (a frame lists messages before the status).
func (t *turner) turn(ctx context.Context) error {
	if _, err := t.e.client.SendMessage(ctx, t.chat, sdk.CreateChatMessageRequest{Content: sdk.Text("Tell me something.")}); err != nil {
		return fmt.Errorf("send to chat %s: %w", t.chat, err)
	}
	replied, status := false, sdk.ChatStatusWaiting
	_, err := t.readFrames(ctx, func(frame []sdk.ChatStreamEvent) bool {
		for _, ev := range frame {
			switch {
			case ev.Type == sdk.StreamMessage && ev.Message != nil && ev.Message.Role == store.RoleAssistant:
				replied = true
			case ev.Type == sdk.StreamStatus && ev.Status != nil:
				status = ev.Status.Status
			}
		}
		return replied && status == sdk.ChatStatusWaiting
	})
	return err
}

// concurrentTurns runs Concurrency chats taking turns for the duration.
func (e *runEnv) concurrentTurns(ctx context.Context) (float64, error) {
	turners := make([]*turner, e.cfg.Concurrency)
	for i := range turners {
		t, err := e.newTurner(ctx)
		if err != nil {
			return 0, err
		}
		defer t.conn.CloseNow()
		turners[i] = t
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		turns int
		errs  []error
	)
	start := time.Now()
	for _, t := range turners {
		wg.Go(func() {
			n := 0
			for time.Since(start) < e.cfg.Duration {
				if err := t.turn(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				n++
			}
			mu.Lock()
			turns += n
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("concurrent turns: %w", err)
	}
	return float64(turns) / elapsed.Seconds(), nil
}

// sequentialTurns times SeqTurns turns of one chat, one after another,
// and breaks them down by chatd's histograms scraped around them.
func (e *runEnv) sequentialTurns(ctx context.Context) (p50, p99 time.Duration, breakdown []Cost, err error) {
	t, err := e.newTurner(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	defer t.conn.CloseNow()
	before, err := e.scrape(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	lat := make([]time.Duration, 0, e.cfg.SeqTurns)
	for range e.cfg.SeqTurns {
		t0 := time.Now()
		if err := t.turn(ctx); err != nil {
			return 0, 0, nil, fmt.Errorf("sequential turns: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	after, err := e.scrape(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	return percentile(lat, 50), percentile(lat, 99), costs(before, after, e.cfg.SeqTurns), nil
}

func (e *runEnv) chatCount(ctx context.Context) (int, error) {
	var n int64
	err := e.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.ChatCountByOwner(ctx, e.owner)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("count chats: %w", err)
	}
	return int(n), nil
}

// acquisition times ChatCountOwned inside a write transaction, as the
// worker runs it on every acquisition.
func (e *runEnv) acquisition(ctx context.Context) (time.Duration, error) {
	p := store.AcquirableParams{Self: uuid.New()}
	lat := make([]time.Duration, 0, e.cfg.Samples)
	for range e.cfg.Samples {
		var d time.Duration
		if err := e.store.InTx(ctx, func(tx store.Tx) error {
			t0 := time.Now()
			_, _, err := tx.ChatCountOwned(ctx, p)
			d = time.Since(t0)
			return err
		}); err != nil {
			return 0, fmt.Errorf("count owned chats: %w", err)
		}
		lat = append(lat, d)
	}
	return percentile(lat, 50), nil
}

// seed inserts chats waiting chats of the bench user, every tenth
// archived and every other labelled, and messages spread over them.
func (e *runEnv) seed(ctx context.Context, chats, messages int) error {
	ids := make([]uuid.UUID, 0, chats)
	base := time.Now().Add(-time.Hour)
	for done := 0; done < chats; done += seedBatch {
		err := e.store.InTx(ctx, func(tx store.Tx) error {
			for i := done; i < min(chats, done+seedBatch); i++ {
				p := store.ChatInsertParams{
					ID: uuid.New(), OwnerID: e.owner, Title: fmt.Sprintf("seeded chat %d", i), TitleSource: store.TitleSourceUser,
					Status: store.ChatStatusWaiting, Now: base.Add(time.Duration(i) * time.Millisecond),
				}
				if i%2 == 0 {
					p.Labels = map[string]string{benchLabelKey: benchLabelValue}
				}
				if _, err := tx.ChatInsert(ctx, p); err != nil {
					return err
				}
				if i%10 == 0 {
					if _, err := tx.ChatUpdate(ctx, p.ID, store.ChatPatch{Archived: store.Some(true)}); err != nil {
						return err
					}
				}
				ids = append(ids, p.ID)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed chats: %w", err)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	content, err := json.Marshal(sdk.Text("seeded message"))
	if err != nil {
		return fmt.Errorf("seed messages: %w", err)
	}
	for done := 0; done < messages; done += seedBatch {
		err := e.store.InTx(ctx, func(tx store.Tx) error {
			for i := done; i < min(messages, done+seedBatch); i++ {
				role := store.RoleUser
				if i%2 == 1 {
					role = store.RoleAssistant
				}
				if _, err := tx.MessageInsert(ctx, store.MessageInsertParams{
					ChatID: ids[i%len(ids)], Role: role, Content: content, Now: time.Now(),
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed messages: %w", err)
		}
	}
	return analyze(ctx, e.store)
}

// analyze refreshes Postgres's planner statistics after a seed, as
// autovacuum would within a minute on a real database: measured before
// it, a freshly seeded table is planned as if it were still small.
func analyze(ctx context.Context, s store.Store) error {
	pg, ok := s.(interface{ Pool() *pgxpool.Pool })
	if !ok {
		return nil
	}
	if _, err := pg.Pool().Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze the seeded tables: %w", err)
	}
	return nil
}

// bootstrap times the stream bootstrap of a History-message chat and the
// store reading the same messages.
func (e *runEnv) bootstrap(ctx context.Context, r *Report) error {
	chat, err := e.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
	if err != nil {
		return fmt.Errorf("bootstrap: create chat: %w", err)
	}
	var text strings.Builder
	for range 40 {
		text.WriteString("lorem ipsum dolor sit amet ")
	}
	content, err := json.Marshal(sdk.Text(text.String()))
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	for done := 0; done < e.cfg.History; done += seedBatch {
		if err := e.store.InTx(ctx, func(tx store.Tx) error {
			for i := done; i < min(e.cfg.History, done+seedBatch); i++ {
				role := store.RoleUser
				if i%2 == 1 {
					role = store.RoleAssistant
				}
				if _, err := tx.MessageInsert(ctx, store.MessageInsertParams{ChatID: chat.ID, Role: role, Content: content, Now: time.Now()}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("bootstrap: seed messages: %w", err)
		}
	}
	sqlLat := make([]time.Duration, 0, e.cfg.Samples)
	for range e.cfg.Samples {
		t0 := time.Now()
		if err := e.store.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.MessageList(ctx, chat.ID, store.MessageListParams{})
			return err
		}); err != nil {
			return fmt.Errorf("bootstrap: list messages: %w", err)
		}
		sqlLat = append(sqlLat, time.Since(t0))
	}
	r.BootstrapSQL = percentile(sqlLat, 50)
	measure := func(query string) ([]time.Duration, int, error) {
		lat := make([]time.Duration, 0, e.cfg.Samples)
		bytes := 0
		for range e.cfg.Samples {
			t0 := time.Now()
			conn, err := e.dial(ctx, chat.ID, query)
			if err != nil {
				return nil, 0, err
			}
			t := &turner{e: e, chat: chat.ID, conn: conn}
			n, err := t.readUntil(ctx, func(ev sdk.ChatStreamEvent) bool { return ev.Type == sdk.StreamPreviewReset })
			lat = append(lat, time.Since(t0))
			conn.CloseNow()
			if err != nil {
				return nil, 0, fmt.Errorf("bootstrap: %w", err)
			}
			bytes = n
		}
		return lat, bytes, nil
	}
	lat, n, err := measure("")
	if err != nil {
		return err
	}
	r.BootstrapP50, r.BootstrapP99, r.BootstrapBytes = percentile(lat, 50), percentile(lat, 99), n
	if lat, n, err = measure("?history_limit=100"); err != nil {
		return err
	}
	r.BootstrapLimitedP99, r.BootstrapLimitedBytes = percentile(lat, 99), n
	return nil
}

// lists times GET /chats under each filter.
func (e *runEnv) lists(ctx context.Context, out map[string]time.Duration) error {
	filters := map[string]sdk.ListChatsOptions{
		"first page":       {},
		"archived=true":    {Archived: "true"},
		"archived=false":   {Archived: "false"},
		"label match":      {Labels: map[string]string{benchLabelKey: benchLabelValue}},
		"label no match":   {Labels: map[string]string{benchLabelKey: "none"}},
		"archived=all":     {Archived: "all"},
		"label+unarchived": {Archived: "false", Labels: map[string]string{benchLabelKey: benchLabelValue}},
		// The bench user is an admin: the filters above list every
		// owner's chats; source:created_by_me lists only its own.
		"own chats": {Query: "source:created_by_me"},
		// Search of titles and message text: a term only the chats that
		// took turns hold (their prompt), one nobody holds, and one too
		// short for the trigram index (a bounded scan of the newest).
		"search, rare term":  {Query: "something"},
		"search, no match":   {Query: "zebrafish"},
		"search, short term": {Query: "qz"},
	}
	for name, opts := range filters {
		lat := make([]time.Duration, 0, e.cfg.ListSamples)
		for range e.cfg.ListSamples {
			t0 := time.Now()
			if _, err := e.client.ListChats(ctx, opts); err != nil {
				return fmt.Errorf("list chats (%s): %w", name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		out[name] = percentile(lat, 99)
	}
	return nil
}
