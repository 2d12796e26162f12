package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/bench/rawws"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Defaults of the capacity run (issue 37): a provider that answers like
// a hosted model under load, two viewers per chat, the chat count stepped
// up until the token p99 passes the limit or a turn stalls.
const (
	DefaultCapacityFirstToken   = 300 * time.Millisecond
	DefaultCapacityTokensPerSec = 30
	DefaultCapacityTokens       = 300
	DefaultCapacityViewers      = 2
	DefaultCapacityP99Limit     = 250 * time.Millisecond
	// capacityModel is the paced provider's model, served as
	// openai/<capacityModel> over Chat Completions.
	capacityModel = "paced"
)

// CapacitySteps are the chat counts of a default capacity run.
var CapacitySteps = []int{10, 50, 100, 250, 500, 1000}

// CapacityConfig sizes a capacity run. Zero values take the defaults.
type CapacityConfig struct {
	// Steps are the concurrent chat counts, in order (CapacitySteps when
	// empty).
	Steps []int
	// FirstToken is the provider's wait before its first token; then it
	// sends TokensPerSec tokens a second, Tokens in all.
	FirstToken   time.Duration
	TokensPerSec int
	Tokens       int
	// Viewers are the stream viewers of each chat.
	Viewers int
	// P99Limit ends the run at the first step whose token p99 passes it
	// (or that does not hold for another reason: see CapacityStep).
	P99Limit time.Duration
}

func (c CapacityConfig) withDefaults() CapacityConfig {
	if len(c.Steps) == 0 {
		c.Steps = CapacitySteps
	}
	if c.FirstToken <= 0 {
		c.FirstToken = DefaultCapacityFirstToken
	}
	if c.TokensPerSec <= 0 {
		c.TokensPerSec = DefaultCapacityTokensPerSec
	}
	if c.Tokens <= 0 {
		c.Tokens = DefaultCapacityTokens
	}
	if c.Viewers <= 0 {
		c.Viewers = DefaultCapacityViewers
	}
	if c.P99Limit <= 0 {
		c.P99Limit = DefaultCapacityP99Limit
	}
	return c
}

// interval is the provider's time between two tokens.
func (c CapacityConfig) interval() time.Duration { return time.Second / time.Duration(c.TokensPerSec) }

// replyLength is how long one reply streams, first token to last.
func (c CapacityConfig) replyLength() time.Duration {
	return time.Duration(c.Tokens-1) * c.interval()
}

// turnDeadline is how long a step waits for its turns before it calls
// the ones still streaming stalled: twice the provider's own time, and
// half a minute more.
func (c CapacityConfig) turnDeadline() time.Duration {
	return 2*(c.FirstToken+time.Duration(c.Tokens)*c.interval()) + 30*time.Second
}

// CapacityLoad is what one side (chatd or the raw baseline) did at one
// step: the token latency every viewer saw, from the provider writing
// the token to the viewer reading it, and the process CPU spent per
// token a viewer received.
type CapacityLoad struct {
	P50, P99 time.Duration
	// Received is how many tokens reached a viewer; Missing how many
	// every viewer should have had and did not (a turn that stalled or
	// parts the stream dropped).
	Received, Missing int
	// CPUPerToken is the process's user and system CPU time over the
	// step, divided by Received (0 where the platform does not say).
	CPUPerToken time.Duration
	// Stalled counts the chats whose turn did not end in time.
	Stalled int
	// FirstP99 is the 99th percentile, over the viewers, of the time from
	// the step's start (its messages being sent) to the viewer's first
	// token: the provider's first-token delay when every turn starts at
	// once, more when turns start late (then fewer stream at once).
	FirstP99 time.Duration
	// PerFrame is the tokens a viewer received per frame that carried
	// any: 1 while viewers keep up, more when their parts are coalesced.
	PerFrame float64
}

// CapacityStep is one chat count's figures, chatd next to the baseline.
type CapacityStep struct {
	Chats    int
	Chatd    CapacityLoad
	Baseline CapacityLoad
	// HeldLimit: chatd's token p99 within the limit, no turn stalled, and
	// the chats streamed at once: the first-token p99 came before one
	// reply's length after the provider's delay (turns that start later
	// than that stream after others ended, so fewer than Chats stream at
	// any one time).
	HeldLimit bool
}

// CapacityReport is what a capacity run measured.
type CapacityReport struct {
	Store  string
	Config CapacityConfig
	Steps  []CapacityStep
	// Held is the largest chat count whose step held the limit (0: none).
	Held int
}

// tableMillis and tableRatio format the capacity and surfaces tables'
// cells: milliseconds with one decimal, a ratio to its baseline ("-"
// without one).
func tableMillis(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

func tableRatio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// Write prints the capacity table.
func (r CapacityReport) Write(w io.Writer) error {
	ms, ratio := tableMillis, tableRatio
	us := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "store: %s; capacity: first token %v, %d tokens/s, %d tokens, %d viewers per chat, p99 limit %v (first token: %v)\n",
		r.Store, c.FirstToken, c.TokensPerSec, c.Tokens, c.Viewers, c.P99Limit, c.FirstToken+c.replyLength())
	fmt.Fprintf(&b, "%-6s %-22s %-22s %-8s %-20s %-20s %-8s %-26s %-20s %s\n", "chats", "chatd p50/p99 ms", "raw ws p50/p99 ms", "p99 x",
		"chatd CPU/token µs", "raw CPU/token µs", "CPU x", "first token p99 ms c/raw", "tokens/frame c/raw", "missing/stalled")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "%-6d %-22s %-22s %-8s %-20s %-20s %-8s %-26s %-20s %d/%d\n", s.Chats,
			ms(s.Chatd.P50)+" / "+ms(s.Chatd.P99), ms(s.Baseline.P50)+" / "+ms(s.Baseline.P99), ratio(s.Chatd.P99, s.Baseline.P99),
			us(s.Chatd.CPUPerToken), us(s.Baseline.CPUPerToken), ratio(s.Chatd.CPUPerToken, s.Baseline.CPUPerToken),
			ms(s.Chatd.FirstP99)+" / "+ms(s.Baseline.FirstP99), fmt.Sprintf("%.2f / %.2f", s.Chatd.PerFrame, s.Baseline.PerFrame),
			s.Chatd.Missing, s.Chatd.Stalled)
	}
	fmt.Fprintf(&b, "largest chat count held: %d\n", r.Held)
	_, err := io.WriteString(w, b.String())
	return err
}

// Capacity runs the capacity steps over s (an open, migrated store it may
// fill with chats), each first through a raw coder/websocket fan-out of
// the same pacing (the baseline), then through chatd: a paced
// OpenAI-compatible provider streams every chat's reply to its viewers
// over chatd's stream. The run stops after the first step that does not
// hold. Capacity closes s.
func Capacity(ctx context.Context, s store.Store, storeName string, cfg CapacityConfig) (r CapacityReport, err error) {
	cfg = cfg.withDefaults()
	r = CapacityReport{Store: storeName, Config: cfg}
	start := time.Now()
	provider := newPacedProvider(cfg, start)
	defer provider.Close()

	acfg := config.Config{
		BootstrapToken: benchToken, OpenAIAPIKey: "bench", OpenAIBaseURL: provider.URL + "/v1",
		Models: []string{"openai/" + capacityModel}, DefaultModel: "openai/" + capacityModel,
	}
	acfg.Worker.RootLimit = maxOf(cfg.Steps)
	e, stop, err := startApp(ctx, s, acfg)
	if err != nil {
		return r, err
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	for _, n := range cfg.Steps {
		step := CapacityStep{Chats: n}
		if step.Baseline, err = rawCapacity(ctx, cfg, start, n); err != nil {
			return r, fmt.Errorf("capacity baseline, %d chats: %w", n, err)
		}
		if step.Chatd, err = e.capacity(ctx, cfg, start, n); err != nil {
			return r, fmt.Errorf("capacity, %d chats: %w", n, err)
		}
		step.HeldLimit = step.Chatd.Stalled == 0 && step.Chatd.P99 <= cfg.P99Limit &&
			step.Chatd.FirstP99 < cfg.FirstToken+cfg.replyLength()
		r.Steps = append(r.Steps, step)
		if !step.HeldLimit {
			break
		}
		r.Held = n
	}
	return r, nil
}

func maxOf(ns []int) int {
	m := 0
	for _, n := range ns {
		m = max(m, n)
	}
	return m
}

// capacity runs one chatd step: n chats, each with cfg.Viewers viewers
// connected before its message is sent.
func (e *runEnv) capacity(ctx context.Context, cfg CapacityConfig, start time.Time, n int) (CapacityLoad, error) {
	chats := make([]uuid.UUID, n)
	urls := make([]string, n)
	for i := range chats {
		chat, err := e.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
		if err != nil {
			return CapacityLoad{}, fmt.Errorf("create chat: %w", err)
		}
		chats[i] = chat.ID
		urls[i] = "ws" + strings.TrimPrefix(e.url, "http") + "/api/v2/chats/" + chat.ID.String() + "/stream"
	}
	header := http.Header{"Authorization": {"Bearer " + benchToken}}
	return measureLoad(ctx, cfg, start, urls, header, func(ctx context.Context) error {
		return forEach(ctx, chats, func(ctx context.Context, chat uuid.UUID) error {
			_, err := e.client.SendMessage(ctx, chat, sdk.CreateChatMessageRequest{Content: sdk.Text("Stream me a long answer.")})
			return err
		})
	})
}

// rawCapacity runs one baseline step: n bare coder/websocket servers,
// each fanning one paced token stream out to cfg.Viewers connections.
func rawCapacity(ctx context.Context, cfg CapacityConfig, start time.Time, n int) (CapacityLoad, error) {
	servers := make([]*rawws.Server, n)
	urls := make([]string, n)
	for i := range servers {
		servers[i] = rawws.New(cfg.Tokens + 1)
		defer servers[i].Close()
		urls[i] = servers[i].URL
	}
	var pacers sync.WaitGroup
	defer pacers.Wait()
	return measureLoad(ctx, cfg, start, urls, nil, func(ctx context.Context) error {
		for _, srv := range servers {
			pacers.Go(func() {
				_ = pace(ctx, cfg, start, func(seq int64, text string) error { return srv.Send(seq, text) })
			})
		}
		return nil
	})
}

// pace waits cfg.FirstToken, then calls send cfg.Tokens times, one every
// interval, each with a token whose text is its send time since start
// (the viewers' latency reference).
func pace(ctx context.Context, cfg CapacityConfig, start time.Time, send func(seq int64, text string) error) error {
	first := time.NewTimer(cfg.FirstToken)
	defer first.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-first.C:
	}
	tick := time.NewTicker(cfg.interval())
	defer tick.Stop()
	for seq := int64(1); seq <= int64(cfg.Tokens); seq++ {
		if err := send(seq, " "+strconv.FormatInt(int64(time.Since(start)), 10)); err != nil {
			return err
		}
		if seq < int64(cfg.Tokens) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}

// measureLoad connects cfg.Viewers viewers to each url, waits until every
// one is ready (it has read its preview_reset), calls begin, and reads
// until every viewer has its tokens (or its reply message, or the step's
// deadline passes). It measures the latency of every token and the
// process CPU per token received.
func measureLoad(ctx context.Context, cfg CapacityConfig, start time.Time, urls []string, header http.Header,
	begin func(context.Context) error,
) (CapacityLoad, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.turnDeadline())
	defer cancel()
	viewers := len(urls) * cfg.Viewers
	lats := make([][]time.Duration, viewers)
	firsts := make([]time.Duration, viewers)
	frames := make([]int, viewers)
	finished := make([]bool, viewers)
	errs := make([]error, viewers)
	var ready, done sync.WaitGroup
	slots := make(chan struct{}, deliveryDialers)
	var failed atomic.Bool
	for i := range viewers {
		ready.Add(1)
		done.Go(func() {
			isReady := false
			defer func() {
				if !isReady {
					ready.Done()
				}
			}()
			slots <- struct{}{}
			conn, _, err := websocket.Dial(ctx, urls[i/cfg.Viewers], &websocket.DialOptions{HTTPHeader: header})
			<-slots
			if err != nil {
				errs[i] = err
				failed.Store(true)
				return
			}
			defer conn.CloseNow()
			conn.SetReadLimit(bootstrapReadLimit)
			lat := make([]time.Duration, 0, cfg.Tokens)
			seen := make(map[int64]bool, cfg.Tokens)
			for len(lat) < cfg.Tokens {
				_, data, err := conn.Read(ctx)
				if err != nil {
					if isReady && ctx.Err() != nil {
						break // stalled: counted as missing tokens
					}
					errs[i] = err
					failed.Store(true)
					return
				}
				now := time.Since(start)
				had := len(lat)
				// note times each token once, when it first arrives.
				note := func(text string) {
					for f := range strings.FieldsSeq(text) {
						if sent, err := strconv.ParseInt(f, 10, 64); err == nil && !seen[sent] {
							seen[sent] = true
							lat = append(lat, now-time.Duration(sent))
						}
					}
				}
				replied, err := readStreamFrame(data, isReady, note, func() {
					isReady = true
					ready.Done()
				})
				if err != nil {
					errs[i] = err
					return
				}
				if len(lat) > had {
					if had == 0 {
						firsts[i] = now
					}
					frames[i]++
				}
				if replied {
					break
				}
			}
			lats[i], finished[i] = lat, len(lat) >= cfg.Tokens || ctx.Err() == nil
			conn.Close(websocket.StatusNormalClosure, "")
		})
	}
	ready.Wait()
	if failed.Load() {
		cancel()
		done.Wait()
		return CapacityLoad{}, errors.Join(errs...)
	}
	cpu0 := processCPU()
	began := time.Since(start)
	if err := begin(ctx); err != nil {
		cancel()
		done.Wait()
		return CapacityLoad{}, fmt.Errorf("start the step: %w", err)
	}
	done.Wait()
	cpu := processCPU() - cpu0
	if err := errors.Join(errs...); err != nil {
		return CapacityLoad{}, err
	}
	var load CapacityLoad
	all := make([]time.Duration, 0, viewers*cfg.Tokens)
	var firstTokens []time.Duration
	withTokens := 0
	stalled := map[int]bool{}
	for i, lat := range lats {
		all = append(all, lat...)
		if len(lat) > 0 {
			firstTokens = append(firstTokens, firsts[i]-began)
		}
		withTokens += frames[i]
		load.Missing += max(0, cfg.Tokens-len(lat))
		if !finished[i] {
			stalled[i/cfg.Viewers] = true
		}
	}
	load.Received, load.Stalled = len(all), len(stalled)
	load.P50, load.P99 = percentile(all, 50), percentile(all, 99)
	load.FirstP99 = percentile(firstTokens, 99)
	if load.Received > 0 {
		load.CPUPerToken = cpu / time.Duration(load.Received)
		load.PerFrame = float64(load.Received) / float64(withTokens)
	}
	return load, nil
}

// readStreamFrame reads one frame of the chat stream: note gets the text
// of every token-carrying part and, once the viewer is ready (it has read
// its preview_reset, which calls onReady), of the committed reply, whose
// arrival ends the viewer's reading (replied).
func readStreamFrame(data []byte, ready bool, note func(text string), onReady func()) (replied bool, err error) {
	var frame []sdk.ChatStreamEvent
	if err := json.Unmarshal(data, &frame); err != nil {
		return false, err
	}
	for _, ev := range frame {
		switch {
		case ev.Type == sdk.StreamMessagePart && ev.MessagePart != nil:
			// A part may carry several tokens when a viewer's parts are
			// coalesced: each is timed.
			note(ev.MessagePart.Part.Text)
		case ev.Type == sdk.StreamPreviewReset && !ready:
			ready = true
			onReady()
		case ev.Type == sdk.StreamMessage && ev.Message != nil && ev.Message.Role == store.RoleAssistant && ready:
			// The committed reply: tokens the viewer had not seen as
			// parts (the stream may send the stored message in place of
			// the last parts) arrive now.
			for _, p := range ev.Message.Content {
				note(p.Text)
			}
			replied = true
		}
	}
	return replied, nil
}

// forEach calls fn for every item, deliveryDialers at a time, and
// returns the first error.
func forEach[T any](ctx context.Context, items []T, fn func(context.Context, T) error) error {
	var wg sync.WaitGroup
	slots := make(chan struct{}, deliveryDialers)
	errs := make([]error, len(items))
	for i, it := range items {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = fn(ctx, it)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pacedProvider is an OpenAI-compatible Chat Completions server whose
// every reply is cfg.Tokens tokens, paced like a hosted model (pace);
// each token's text is its send time since the run's start.
type pacedProvider struct {
	*httptest.Server
}

func newPacedProvider(cfg CapacityConfig, start time.Time) *pacedProvider {
	p := &pacedProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"`+capacityModel+`","object":"model","created":1700000000,"owned_by":"bench"}]}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
			_, _ = io.Copy(io.Discard, r.Body)
			p.stream(w, r, cfg, start)
		default:
			http.NotFound(w, r)
		}
	}))
	return p
}

func (p *pacedProvider) stream(w http.ResponseWriter, r *http.Request, cfg CapacityConfig, start time.Time) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	write := func(delta, finish string) error {
		if finish != "" {
			finish = `"` + finish + `"`
		} else {
			finish = "null"
		}
		_, err := fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,"+
			"\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", capacityModel, delta, finish)
		if err == nil && flusher != nil {
			flusher.Flush()
		}
		return err
	}
	if write(`{"role":"assistant","content":""}`, "") != nil {
		return
	}
	err := pace(r.Context(), cfg, start, func(_ int64, text string) error {
		return write(`{"content":"`+text+`"}`, "")
	})
	if err != nil || write(`{}`, "stop") != nil {
		return
	}
	_, _ = fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[],"+
		"\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", capacityModel, cfg.Tokens, cfg.Tokens+10)
	if flusher != nil {
		flusher.Flush()
	}
}
