package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Defaults of the surfaces figures (issue 37, item 4).
const (
	DefaultSurfaceChats  = 10
	DefaultSurfaceTokens = 100
)

// SurfacesConfig sizes the surfaces figures: Chats chats at once, each
// answered by the capacity run's paced provider with Tokens tokens, the
// first after FirstToken, then TokensPerSec a second (the capacity run's
// pacing when zero).
type SurfacesConfig struct {
	Chats        int
	Tokens       int
	FirstToken   time.Duration
	TokensPerSec int
}

func (c SurfacesConfig) withDefaults() SurfacesConfig {
	if c.Chats <= 0 {
		c.Chats = DefaultSurfaceChats
	}
	if c.Tokens <= 0 {
		c.Tokens = DefaultSurfaceTokens
	}
	p := CapacityConfig{FirstToken: c.FirstToken, TokensPerSec: c.TokensPerSec}.withDefaults()
	c.FirstToken, c.TokensPerSec = p.FirstToken, p.TokensPerSec
	return c
}

// SurfaceRow is one surface's figures. P50 and P99 are the live token
// latency (the provider writing a token to a viewer reading it) over two
// viewers of every chat; Resume is how long a viewer that joins halfway
// through a reply takes to hold every token sent before it joined (the
// WebSocket stream's bootstrap, the AI SDK's resume GET, the Responses
// API's GET ?stream=true). Missing counts the tokens some viewer never got.
type SurfaceRow struct {
	Surface                string
	P50, P99               time.Duration
	ResumeP50, ResumeP99   time.Duration
	Missing, Received      int
	ResumeSamples, Viewers int
}

// SurfacesReport is what the surfaces figures measured; Rows[0] is the
// native WebSocket stream, the others' baseline.
type SurfacesReport struct {
	Store  string
	Config SurfacesConfig
	Rows   []SurfaceRow
}

// Write prints the surfaces table.
func (r SurfacesReport) Write(w io.Writer) error {
	ms, ratio := tableMillis, tableRatio
	var b strings.Builder
	fmt.Fprintf(&b, "store: %s; surfaces: %d chats at once, %d tokens each (first after %v, then %d/s); ratios to the WebSocket stream\n",
		r.Store, r.Config.Chats, r.Config.Tokens, r.Config.FirstToken, r.Config.TokensPerSec)
	fmt.Fprintf(&b, "%-10s %-20s %-7s %-22s %-7s %s\n", "surface", "token p50/p99 ms", "p99 x", "resume p50/p99 ms", "p99 x", "missing")
	var base SurfaceRow
	for i, row := range r.Rows {
		if i == 0 {
			base = row
		}
		fmt.Fprintf(&b, "%-10s %-20s %-7s %-22s %-7s %d\n", row.Surface,
			ms(row.P50)+" / "+ms(row.P99), ratio(row.P99, base.P99),
			ms(row.ResumeP50)+" / "+ms(row.ResumeP99), ratio(row.ResumeP99, base.ResumeP99), row.Missing)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Surfaces measures the protocol surfaces a client may stream a reply
// through, on s (which it closes): the native WebSocket stream, the AI SDK
// UI message stream and the OpenAI Responses stream, each with the same
// paced provider, chat count and viewers.
func Surfaces(ctx context.Context, s store.Store, storeName string, cfg SurfacesConfig) (r SurfacesReport, err error) {
	cfg = cfg.withDefaults()
	r = SurfacesReport{Store: storeName, Config: cfg}
	pacing := CapacityConfig{Tokens: cfg.Tokens, FirstToken: cfg.FirstToken, TokensPerSec: cfg.TokensPerSec}.withDefaults()
	start := time.Now()
	provider := newPacedProvider(pacing, start)
	defer provider.Close()
	acfg := config.Config{
		BootstrapToken: benchToken, OpenAIAPIKey: "bench", OpenAIBaseURL: provider.URL + "/v1",
		Models: []string{"openai/" + capacityModel}, DefaultModel: "openai/" + capacityModel,
	}
	acfg.Worker.RootLimit = cfg.Chats
	e, stop, err := startApp(ctx, s, acfg)
	if err != nil {
		return r, err
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	sv := surfaceViewers{e: e, start: start, pacing: pacing}
	for _, surf := range []surface{
		{"websocket", sv.websocket},
		{"ai-sdk", sv.aiSDK},
		{"openai", sv.openAI},
	} {
		row, err := sv.measure(ctx, surf, cfg.Chats)
		if err != nil {
			return r, fmt.Errorf("surface %s: %w", surf.name, err)
		}
		r.Rows = append(r.Rows, row)
	}
	return r, nil
}

// A surface starts a turn in a fresh chat and hands back its viewers: the
// two that watch it from the start, and join, which opens one more viewer
// of the running turn.
type surface struct {
	name  string
	start func(ctx context.Context, i int) (viewers [2]tokenSource, join func(context.Context) (tokenSource, error), err error)
}

// tokenSource yields the token texts a viewer receives, frame by frame,
// until the reply ends (io.EOF).
type tokenSource interface {
	next(ctx context.Context) ([]string, error)
	close()
}

// arrival is one token at one viewer: when the provider sent it and when
// the viewer read it, both since the run's start.
type arrival struct{ sent, at time.Duration }

type surfaceViewers struct {
	e      *runEnv
	start  time.Time
	pacing CapacityConfig
}

func (sv surfaceViewers) since() time.Duration { return time.Since(sv.start) }

// collect reads src to its end and returns each token once, at its first
// arrival; halfway (when given) is closed once half the reply has arrived.
func (sv surfaceViewers) collect(ctx context.Context, src tokenSource, halfway chan<- struct{}) ([]arrival, error) {
	defer src.close()
	seen := make(map[int64]bool, sv.pacing.Tokens)
	var out []arrival
	for {
		texts, err := src.next(ctx)
		now := sv.since()
		for _, t := range texts {
			for f := range strings.FieldsSeq(t) {
				if sent, perr := strconv.ParseInt(f, 10, 64); perr == nil && !seen[sent] {
					seen[sent] = true
					out = append(out, arrival{sent: time.Duration(sent), at: now})
					if halfway != nil && len(out) == sv.pacing.Tokens/2 {
						close(halfway)
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// measure runs n chats through surf at once: two viewers of each from the
// start, and a third that joins halfway through the reply.
func (sv surfaceViewers) measure(ctx context.Context, surf surface, n int) (SurfaceRow, error) {
	ctx, cancel := context.WithTimeout(ctx, sv.pacing.turnDeadline())
	defer cancel()
	row := SurfaceRow{Surface: surf.name, Viewers: 3 * n}
	var (
		mu      sync.Mutex
		live    []time.Duration
		resumes []time.Duration
		wg      sync.WaitGroup
	)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			viewers, join, err := surf.start(ctx, i)
			if err != nil {
				errs[i] = err
				return
			}
			var vw sync.WaitGroup
			got := make([][]arrival, 3)
			verr := make([]error, 3)
			// The third viewer joins when the first has half the reply.
			halfway := make(chan struct{})
			for v, src := range viewers {
				opened := sv.since()
				var signal chan<- struct{}
				if v == 0 {
					signal = halfway
				}
				vw.Go(func() {
					arr, err := sv.collect(ctx, src, signal)
					got[v], verr[v] = arr, err
					mu.Lock()
					defer mu.Unlock()
					for _, a := range arr {
						if a.sent >= opened { // a replayed token is not live
							live = append(live, a.at-a.sent)
						}
					}
				})
			}
			select {
			case <-ctx.Done():
			case <-halfway:
				joined := sv.since()
				src, err := join(ctx)
				if err != nil {
					verr[2] = fmt.Errorf("join: %w", err)
					break
				}
				arr, err := sv.collect(ctx, src, nil)
				got[2], verr[2] = arr, err
				if d, ok := caughtUp(arr, joined); ok {
					mu.Lock()
					resumes = append(resumes, d)
					mu.Unlock()
				}
			}
			vw.Wait()
			mu.Lock()
			defer mu.Unlock()
			for _, arr := range got {
				row.Received += len(arr)
				row.Missing += max(0, sv.pacing.Tokens-len(arr))
			}
			errs[i] = errors.Join(verr...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return row, err
	}
	row.P50, row.P99 = percentile(live, 50), percentile(live, 99)
	row.ResumeP50, row.ResumeP99 = percentile(resumes, 50), percentile(resumes, 99)
	row.ResumeSamples = len(resumes)
	return row, nil
}

// caughtUp is how long after joined a viewer held every token sent before
// it joined: the arrival of the last of them, known once a later token
// arrives (tokens arrive in the order they were sent).
func caughtUp(arr []arrival, joined time.Duration) (time.Duration, bool) {
	var last time.Duration
	before := false
	for _, a := range arr {
		if a.sent < joined {
			last, before = a.at, true
			continue
		}
		return last - joined, before
	}
	return 0, false
}

// websocket starts a turn with the native API, its two viewers being
// stream connections made (and bootstrapped) before the message is sent.
func (sv surfaceViewers) websocket(ctx context.Context, _ int) ([2]tokenSource, func(context.Context) (tokenSource, error), error) {
	var viewers [2]tokenSource
	chat, err := sv.e.client.CreateChat(ctx, sdk.CreateChatRequest{Title: benchTitle})
	if err != nil {
		return viewers, nil, fmt.Errorf("create chat: %w", err)
	}
	url := "ws" + strings.TrimPrefix(sv.e.url, "http") + "/api/v2/chats/" + chat.ID.String() + "/stream"
	dial := func(ctx context.Context) (tokenSource, error) {
		conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + benchToken}}})
		if err != nil {
			return nil, err
		}
		conn.SetReadLimit(bootstrapReadLimit)
		return &wsTokens{conn: conn}, nil
	}
	for v := range viewers {
		src, err := dial(ctx)
		if err != nil {
			return viewers, nil, err
		}
		ws := src.(*wsTokens)
		early, err := ws.awaitReady(ctx)
		if err != nil {
			ws.close()
			return viewers, nil, err
		}
		viewers[v] = &held{tokenSource: ws, texts: early}
	}
	if _, err := sv.e.client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("Stream me a long answer.")}); err != nil {
		return viewers, nil, fmt.Errorf("send: %w", err)
	}
	return viewers, dial, nil
}

// aiSDK starts a turn with the AI SDK transport's POST (the first viewer
// is its answer); the second viewer and the joiner resume with GET
// …/stream, as useChat's resumeStream does.
func (sv surfaceViewers) aiSDK(ctx context.Context, i int) ([2]tokenSource, func(context.Context) (tokenSource, error), error) {
	var viewers [2]tokenSource
	id := "bench-" + strconv.Itoa(i) + "-" + uuid.NewString()[:8]
	body := map[string]any{"id": id, "trigger": "submit-message", "messages": []map[string]any{{
		"id": "m1", "role": "user", "parts": []map[string]any{{"type": "text", "text": "Stream me a long answer."}},
	}}}
	first, err := sv.sse(ctx, http.MethodPost, "/api/v2/ai-sdk/chat", body, aiSDKDelta)
	if err != nil {
		return viewers, nil, err
	}
	viewers[0] = first
	resume := func(ctx context.Context) (tokenSource, error) {
		return sv.sse(ctx, http.MethodGet, "/api/v2/ai-sdk/chat/"+id+"/stream", nil, aiSDKDelta)
	}
	if viewers[1], err = resume(ctx); err != nil {
		first.close()
		return viewers, nil, err
	}
	return viewers, resume, nil
}

// openAI starts a turn with POST /v1/responses and stream: true (the first
// viewer); the second viewer and the joiner read GET
// /v1/responses/{id}?stream=true, which replays the response and follows it.
func (sv surfaceViewers) openAI(ctx context.Context, _ int) ([2]tokenSource, func(context.Context) (tokenSource, error), error) {
	var viewers [2]tokenSource
	created := make(chan string, 1)
	delta := func(data []byte) ([]string, bool) {
		var ev struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return nil, false
		}
		if ev.Type == "response.created" {
			select {
			case created <- ev.Response.ID:
			default:
			}
		}
		return openAIDelta(ev.Type, ev.Delta)
	}
	first, err := sv.sse(ctx, http.MethodPost, "/v1/responses",
		map[string]any{"model": "openai/" + capacityModel, "input": "Stream me a long answer.", "stream": true}, delta)
	if err != nil {
		return viewers, nil, err
	}
	// The response's id comes in the first viewer's first event: read up
	// to it, keeping what was read for that viewer.
	var (
		id    string
		early []string
	)
	for id == "" {
		texts, err := first.next(ctx)
		early = append(early, texts...)
		if err != nil {
			first.close()
			return viewers, nil, fmt.Errorf("read up to response.created: %w", err)
		}
		select {
		case id = <-created:
		default:
		}
	}
	viewers[0] = &held{tokenSource: first, texts: early}
	resume := func(ctx context.Context) (tokenSource, error) {
		return sv.sse(ctx, http.MethodGet, "/v1/responses/"+id+"?stream=true", nil, func(data []byte) ([]string, bool) {
			var ev struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			}
			if json.Unmarshal(data, &ev) != nil {
				return nil, false
			}
			return openAIDelta(ev.Type, ev.Delta)
		})
	}
	if viewers[1], err = resume(ctx); err != nil {
		first.close()
		return viewers, nil, err
	}
	return viewers, resume, nil
}

// held is a token source with texts already read from it.
type held struct {
	tokenSource
	texts []string
}

func (h *held) next(ctx context.Context) ([]string, error) {
	if len(h.texts) > 0 {
		texts := h.texts
		h.texts = nil
		return texts, nil
	}
	return h.tokenSource.next(ctx)
}

func aiSDKDelta(data []byte) ([]string, bool) {
	var ch struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	}
	if json.Unmarshal(data, &ch) != nil {
		return nil, false
	}
	switch ch.Type {
	case "text-delta":
		return []string{ch.Delta}, false
	case "finish", "error", "abort":
		return nil, true
	}
	return nil, false
}

func openAIDelta(typ, delta string) ([]string, bool) {
	switch typ {
	case "response.output_text.delta":
		return []string{delta}, false
	case "response.completed", "response.failed", "response.incomplete", "response.cancelled":
		return nil, true
	}
	return nil, false
}

// sse opens an SSE stream of the bench user; parse reads one data frame
// into its token texts and whether the reply ended.
func (sv surfaceViewers) sse(ctx context.Context, method, path string, body any, parse func([]byte) ([]string, bool)) (tokenSource, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	// A resume can come before the turn is admitted (204: nothing runs
	// yet): ask again until it streams.
	for {
		req, err := http.NewRequestWithContext(ctx, method, sv.e.url+path, rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+benchToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			return &sseTokens{resp: resp, r: bufio.NewReader(resp.Body), parse: parse}, nil
		case resp.StatusCode == http.StatusNoContent && method == http.MethodGet:
			resp.Body.Close()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		default:
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
		}
	}
}

// sseTokens reads an SSE body's data frames.
type sseTokens struct {
	resp  *http.Response
	r     *bufio.Reader
	parse func([]byte) ([]string, bool)
	ended bool
}

func (s *sseTokens) next(context.Context) ([]string, error) {
	if s.ended {
		return nil, io.EOF
	}
	for {
		line, err := s.r.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: ")); ok {
			if string(data) == "[DONE]" {
				s.ended = true
				return nil, io.EOF
			}
			texts, end := s.parse(data)
			if end {
				s.ended = true
				return texts, io.EOF
			}
			if len(texts) > 0 {
				return texts, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *sseTokens) close() { s.resp.Body.Close() }

// wsTokens reads the chat stream: token parts, then the committed reply.
type wsTokens struct {
	conn  *websocket.Conn
	ready bool
}

// awaitReady reads the bootstrap up to its preview_reset and returns the
// tokens it carried.
func (w *wsTokens) awaitReady(ctx context.Context) ([]string, error) {
	var early []string
	for !w.ready {
		texts, err := w.next(ctx)
		early = append(early, texts...)
		if err != nil {
			return early, err
		}
	}
	return early, nil
}

func (w *wsTokens) next(ctx context.Context) ([]string, error) {
	_, data, err := w.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	var texts []string
	replied, err := readStreamFrame(data, w.ready, func(t string) { texts = append(texts, t) }, func() { w.ready = true })
	if err == nil && replied {
		err = io.EOF
	}
	return texts, err
}

func (w *wsTokens) close() { w.conn.CloseNow() }
