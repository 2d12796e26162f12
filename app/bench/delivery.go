package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/bench/rawws"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// Defaults of the delivery figures.
const (
	DefaultDeliveryTokens = 100
	DefaultIdleViewers    = 500
	// deliveryAddParts is how many parts the AddPart cost is averaged over.
	deliveryAddParts = 200
	// deliveryDialers bounds concurrent WebSocket handshakes.
	deliveryDialers = 32
)

// DeliveryViewers are the viewer counts of the token delivery rows.
var DeliveryViewers = []int{1, 100, 1000}

// DeliveryConfig sizes the token delivery figures. Zero values take the
// defaults.
type DeliveryConfig struct {
	// Tokens is how many parts each viewer count streams.
	Tokens int
	// Viewers are the viewer counts (DeliveryViewers when empty).
	Viewers []int
	// IdleViewers is how many idle viewers the memory figure holds.
	IdleViewers int
}

func (c DeliveryConfig) withDefaults() DeliveryConfig {
	if c.Tokens <= 0 {
		c.Tokens = DefaultDeliveryTokens
	}
	if len(c.Viewers) == 0 {
		c.Viewers = DeliveryViewers
	}
	if c.IdleViewers <= 0 {
		c.IdleViewers = DefaultIdleViewers
	}
	return c
}

// DeliveryRow is one viewer count's token delivery latency, from the
// part entering the part buffer to its arrival at a viewer, next to a raw
// coder/websocket server writing the same frames to as many connections.
type DeliveryRow struct {
	Viewers          int
	P50, P99         time.Duration
	BaseP50, BaseP99 time.Duration
}

// DeliveryReport is what the delivery figures measured.
type DeliveryReport struct {
	Rows []DeliveryRow
	// IdleViewers were held; IdleViewerBytes is the memory (heap and
	// stacks, both ends of the connection) per idle stream viewer,
	// IdleBareBytes per bare coder/websocket connection held the same
	// way; the goroutines per connection likewise.
	IdleViewers                         int
	IdleViewerBytes, IdleBareBytes      float64
	IdleViewerGoroutines, IdleBareGorou float64
	// AddPart1 and AddPart1000: one AddPart call (the generating
	// goroutine's cost) with 1 and 1,000 subscribers that keep up.
	AddPart1, AddPart1000 time.Duration
}

func (d DeliveryReport) write(row func(name, got, base, ratio string)) {
	us := func(t time.Duration) string { return fmt.Sprintf("%.0f µs", float64(t)/float64(time.Microsecond)) }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", a/b)
	}
	for _, r := range d.Rows {
		row(fmt.Sprintf("token delivery p99, %d viewers, vs raw ws", r.Viewers), us(r.P99)+" (p50 "+us(r.P50)+")",
			us(r.BaseP99)+" (p50 "+us(r.BaseP50)+")", ratio(float64(r.P99), float64(r.BaseP99)))
	}
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	row(fmt.Sprintf("memory per idle viewer (%d) vs bare ws", d.IdleViewers),
		fmt.Sprintf("%s, %.1f goroutines", kib(d.IdleViewerBytes), d.IdleViewerGoroutines),
		fmt.Sprintf("%s, %.1f goroutines", kib(d.IdleBareBytes), d.IdleBareGorou), ratio(d.IdleViewerBytes, d.IdleBareBytes))
	row("AddPart at 1000 vs 1 subscribers", us(d.AddPart1000), us(d.AddPart1), ratio(float64(d.AddPart1000), float64(d.AddPart1)))
}

// deliveryEnv is a stream server of its own over the run's store, with
// its own part buffer and a worker id of its own, so that the figures
// measure the stream and not the app's connection limits or worker.
type deliveryEnv struct {
	store      store.Store
	generating *atomic.Value // uuid.UUID: the chat generatingStore reports as generating
	client     *sdk.Client
	worker     uuid.UUID
	buffer     *partbuf.Buffer
	poller     *stream.Poller
	server     *stream.Server
	http       *httptest.Server
}

type benchLocator struct{ id uuid.UUID }

func (l benchLocator) Local() uuid.UUID { return l.id }
func (l benchLocator) Token() string    { return "" }
func (l benchLocator) Replica(context.Context, uuid.UUID) (store.Replica, error) {
	return store.Replica{}, errors.New("bench: no other replica")
}

func newDeliveryEnv(s store.Store, client *sdk.Client) *deliveryEnv {
	d := &deliveryEnv{store: s, client: client, worker: uuid.New(), generating: &atomic.Value{}}
	d.generating.Store(uuid.Nil)
	d.buffer = partbuf.New(partbuf.Config{MaxBytes: 1 << 30})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d.poller = stream.NewPoller(s, time.Hour, nil, log)
	d.server = stream.NewServer(stream.Config{
		Store: generatingStore{ReadStore: s, worker: d.worker, generating: d.generating}, Pubsub: pubsub.NewMemory(), Poller: d.poller, Buffer: d.buffer,
		Locator: benchLocator{d.worker}, Log: log,
	})
	d.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			http.Error(w, "bad chat id", http.StatusBadRequest)
			return
		}
		d.server.HandleStream(w, r, id)
	}))
	return d
}

func (d *deliveryEnv) close() {
	d.server.Close()
	d.http.Close()
	d.buffer.Stop()
}

// generatingChat makes a chat that the stream reads as generating on
// this env's worker (generatingStore), with its episode open in the
// env's buffer.
func (d *deliveryEnv) generatingChat(ctx context.Context) (uuid.UUID, partbuf.Episode, error) {
	chat, err := d.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
	if err != nil {
		return uuid.Nil, partbuf.Episode{}, fmt.Errorf("create chat: %w", err)
	}
	d.generating.Store(chat.ID)
	ep := partbuf.Episode{ChatID: chat.ID, GenerationAttempt: generatingAttempt}
	var row store.Chat
	if err := d.store.ReadTx(ctx, func(tx store.Reader) error {
		row, err = tx.ChatGet(ctx, chat.ID)
		return err
	}); err != nil {
		return uuid.Nil, partbuf.Episode{}, fmt.Errorf("read chat %s: %w", chat.ID, err)
	}
	ep.HistoryVersion = row.HistoryVersion
	if err := d.buffer.CreateEpisode(ep); err != nil {
		return uuid.Nil, partbuf.Episode{}, err
	}
	return chat.ID, ep, nil
}

// generatingAttempt is the generation attempt generatingStore reports.
const generatingAttempt = 1

// generatingStore is the run's store as the delivery env's stream reads
// it: the chat in generating reads as running on the env's worker at
// generatingAttempt, as if a runner were streaming it, without a worker
// or a model taking part.
type generatingStore struct {
	store.ReadStore
	worker     uuid.UUID
	generating *atomic.Value // uuid.UUID
}

func (g generatingStore) ReadTx(ctx context.Context, fn func(store.Reader) error) error {
	return g.ReadStore.ReadTx(ctx, func(r store.Reader) error {
		return fn(generatingReader{Reader: r, g: g})
	})
}

type generatingReader struct {
	store.Reader
	g generatingStore
}

func (r generatingReader) ChatGet(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := r.Reader.ChatGet(ctx, id)
	if err == nil && r.g.generating.Load() == id {
		c.Status = store.ChatStatusRunning
		c.WorkerID = uuid.NullUUID{UUID: r.g.worker, Valid: true}
		c.GenerationAttempt = generatingAttempt
	}
	return c, err
}

func (d *deliveryEnv) url(chat uuid.UUID) string {
	return "ws" + strings.TrimPrefix(d.http.URL, "http") + "/" + chat.String()
}

// measureDelivery takes the delivery figures: token latency at each
// viewer count, the memory of idle viewers, the AddPart cost.
func measureDelivery(ctx context.Context, s store.Store, client *sdk.Client, cfg DeliveryConfig) (DeliveryReport, error) {
	cfg = cfg.withDefaults()
	r := DeliveryReport{IdleViewers: cfg.IdleViewers}
	d := newDeliveryEnv(s, client)
	defer d.close()
	for _, n := range cfg.Viewers {
		// Pace tokens like a provider, leaving each time to reach every
		// viewer on two cores, so that latency is not queueing.
		interval := max(time.Millisecond, time.Duration(n)*30*time.Microsecond)
		base, err := baselineDelivery(ctx, n, cfg.Tokens, interval)
		if err != nil {
			return r, fmt.Errorf("delivery baseline, %d viewers: %w", n, err)
		}
		got, err := d.streamDelivery(ctx, n, cfg.Tokens, interval)
		if err != nil {
			return r, fmt.Errorf("delivery, %d viewers: %w", n, err)
		}
		r.Rows = append(r.Rows, DeliveryRow{
			Viewers: n, P50: percentile(got, 50), P99: percentile(got, 99),
			BaseP50: percentile(base, 50), BaseP99: percentile(base, 99),
		})
	}
	var err error
	if r.IdleBareBytes, r.IdleBareGorou, err = idleBare(ctx, cfg.IdleViewers); err != nil {
		return r, fmt.Errorf("idle bare connections: %w", err)
	}
	if r.IdleViewerBytes, r.IdleViewerGoroutines, err = d.idleViewers(ctx, cfg.IdleViewers); err != nil {
		return r, fmt.Errorf("idle viewers: %w", err)
	}
	if r.AddPart1, err = AddPartCost(ctx, 1, deliveryAddParts); err != nil {
		return r, err
	}
	if r.AddPart1000, err = AddPartCost(ctx, 1000, deliveryAddParts); err != nil {
		return r, err
	}
	return r, nil
}

func (d *deliveryEnv) streamDelivery(ctx context.Context, viewers, tokens int, interval time.Duration) ([]time.Duration, error) {
	chat, ep, err := d.generatingChat(ctx)
	if err != nil {
		return nil, err
	}
	defer d.buffer.CloseEpisode(ep)
	return deliver(ctx, d.url(chat), viewers, tokens, interval, func(_ int64, sent time.Duration) error {
		return d.buffer.AddPart(ep, sdk.ChatMessagePart{Type: sdk.PartText, Text: " " + strconv.FormatInt(int64(sent), 10)})
	})
}

// baselineDelivery writes the stream's message_part frames with bare
// coder/websocket: one writer goroutine per connection, each frame
// encoded once for all of them.
func baselineDelivery(ctx context.Context, viewers, tokens int, interval time.Duration) ([]time.Duration, error) {
	raw := rawws.New(tokens)
	defer raw.Close()
	return deliver(ctx, raw.URL, viewers, tokens, interval, func(seq int64, sent time.Duration) error {
		return raw.Send(seq, " "+strconv.FormatInt(int64(sent), 10))
	})
}

// deliver connects viewers to url, waits until each has seen
// preview_reset, then emits tokens parts, one per interval, and returns
// every viewer's latency for every part. A part's text is a space and its
// emission time since the start, so readers share nothing and read each
// token of a merged part.
func deliver(ctx context.Context, url string, viewers, tokens int, interval time.Duration,
	emit func(seq int64, sent time.Duration) error,
) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	results := make([][]time.Duration, viewers)
	errs := make([]error, viewers)
	var ready, done sync.WaitGroup
	slots := make(chan struct{}, deliveryDialers)
	for i := range viewers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			isReady := false
			defer func() {
				if !isReady {
					ready.Done()
				}
			}()
			slots <- struct{}{}
			conn, _, err := websocket.Dial(ctx, url, nil)
			<-slots
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.CloseNow()
			conn.SetReadLimit(1 << 22)
			lat := make([]time.Duration, 0, tokens)
			for len(lat) < tokens {
				_, data, err := conn.Read(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				now := time.Since(start)
				var frame []sdk.ChatStreamEvent
				if err := json.Unmarshal(data, &frame); err != nil {
					errs[i] = err
					return
				}
				for _, e := range frame {
					switch {
					case e.Type == sdk.StreamMessagePart && e.MessagePart != nil:
						// A viewer that fell behind gets tokens merged
						// into one part (API.md, Stream): read each.
						for f := range strings.FieldsSeq(e.MessagePart.Part.Text) {
							sent, _ := strconv.ParseInt(f, 10, 64)
							lat = append(lat, now-time.Duration(sent))
						}
					case e.Type == sdk.StreamPreviewReset && !isReady:
						isReady = true
						ready.Done()
					}
				}
			}
			results[i] = lat
			conn.Close(websocket.StatusNormalClosure, "")
		}()
	}
	ready.Wait()
	if err := errors.Join(errs...); err != nil {
		cancel()
		done.Wait()
		return nil, err
	}
	tick := time.NewTicker(interval)
	var emitErr error
	for seq := int64(1); seq <= int64(tokens) && emitErr == nil; seq++ {
		<-tick.C
		emitErr = emit(seq, time.Since(start))
	}
	tick.Stop()
	if emitErr != nil {
		cancel()
	}
	done.Wait()
	if err := errors.Join(append(errs, emitErr)...); err != nil {
		return nil, err
	}
	all := make([]time.Duration, 0, viewers*tokens)
	for _, lat := range results {
		all = append(all, lat...)
	}
	return all, nil
}

// memNow is the heap and stack memory in use after a collection, and
// the goroutine count.
func memNow() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse, runtime.NumGoroutine()
}

// holdIdle dials n connections to url, waits until each has read its
// first frame (a bare server sends one too), and measures the memory and
// goroutines they hold, per connection. Every client holds its
// connection with one reading goroutine, as a viewer does.
func holdIdle(ctx context.Context, url string, n int) (float64, float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem0, g0 := memNow()
	conns := make([]*websocket.Conn, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	slots := make(chan struct{}, deliveryDialers)
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			slots <- struct{}{}
			conn, _, err := websocket.Dial(ctx, url, nil)
			<-slots
			if err != nil {
				errs[i] = err
				ready.Done()
				return
			}
			conns[i] = conn
			defer conn.CloseNow()
			// The stream's bootstrap (or the bare server's hello) comes
			// in one frame for an idle chat: read it, then wait.
			_, _, err = conn.Read(ctx)
			ready.Done()
			if err != nil {
				errs[i] = err
				return
			}
			_, _, _ = conn.Read(ctx)
		}()
	}
	ready.Wait()
	mem1, g1 := memNow()
	cancel()
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	return (float64(mem1) - float64(mem0)) / float64(n), float64(g1-g0) / float64(n), nil
}

// idleBare holds n bare coder/websocket connections: the server sends
// one frame and then only reads, as CloseRead does.
func idleBare(ctx context.Context, n int) (float64, float64, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := conn.CloseRead(r.Context())
		if conn.Write(ctx, websocket.MessageText, []byte("[]")) != nil {
			return
		}
		<-ctx.Done()
	}))
	defer srv.Close()
	return holdIdle(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), n)
}

// idleViewers holds n stream viewers of one idle chat.
func (d *deliveryEnv) idleViewers(ctx context.Context, n int) (float64, float64, error) {
	chat, err := d.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
	if err != nil {
		return 0, 0, fmt.Errorf("create chat: %w", err)
	}
	return holdIdle(ctx, d.url(chat.ID), n)
}

// AddPartCost is the mean time of one partbuf.AddPart call with
// subscribers readers that keep up: each part is added once every
// subscriber has received the previous one, so every reader is waiting
// for it, as viewers of a paced provider stream are.
func AddPartCost(ctx context.Context, subscribers, parts int) (time.Duration, error) {
	buf := partbuf.New(partbuf.Config{MaxBytes: 1 << 30})
	defer buf.Stop()
	ep := partbuf.Episode{ChatID: uuid.New(), HistoryVersion: 1, GenerationAttempt: 1}
	if err := buf.CreateEpisode(ep); err != nil {
		return 0, err
	}
	var (
		got  sync.WaitGroup
		done sync.WaitGroup
	)
	for range subscribers {
		ch, cancel := buf.SubscribeToEpisode(ctx, ep)
		defer cancel()
		done.Go(func() {
			for range ch {
				got.Done()
			}
		})
	}
	part := sdk.ChatMessagePart{Type: sdk.PartText, Text: "The quick brown fox jumps "}
	var total time.Duration
	for range parts {
		got.Add(subscribers)
		t0 := time.Now()
		if err := buf.AddPart(ep, part); err != nil {
			return 0, fmt.Errorf("add part: %w", err)
		}
		total += time.Since(t0)
		got.Wait()
	}
	buf.CloseEpisode(ep)
	done.Wait()
	return total / time.Duration(parts), nil
}

// ParseViewers reads a comma-separated list of positive viewer counts
// (`chatd bench --delivery-viewers 1,100,1000`).
func ParseViewers(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("viewer counts must be positive integers, got %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
