package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// crashProxy stands between the client and chatd. It forwards everything,
// answering 502 while chatd is down, except the first send of the durable
// request: that one reaches chatd and is admitted, then the proxy waits
// for crashPoint, SIGKILLs chatd and drops the client's connection, so the
// client has lost the answer of an admitted request.
type crashProxy struct {
	upstream   string
	requestID  uuid.UUID
	crashPoint func()
	kill       func()
	fired      atomic.Bool
	killed     chan struct{}
}

func (p *crashProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway) // chatd is down
		return
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if r.Method == http.MethodPost && bytes.Contains(body, []byte(p.requestID.String())) && p.fired.CompareAndSwap(false, true) {
		if res.StatusCode != http.StatusOK {
			http.Error(w, fmt.Sprintf("the first send was not admitted: %d %s", res.StatusCode, answer), http.StatusTeapot)
			return
		}
		p.crashPoint()
		p.kill()
		close(p.killed)
		panic(http.ErrAbortHandler) // the answer is lost with the process
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(answer)
}

// A client retrying the same request id across a kill -9 (sdk.SendWithID,
// its answer lost with the process) gets exactly one message and at most
// one effect, and afterwards either the saved answer (the turn had no
// started effectful call: it resumes after the restart) or
// INVOCATION_UNRESOLVED with the journal entry to review (an effectful
// call was under way), which `chatd invocation inspect` shows beside the
// running server.
func TestRetryAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	bin := chatdBinary(t)

	for _, effectful := range []bool{false, true} {
		name := "no-effect-started"
		if effectful {
			name = "effect-under-way"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var hits atomic.Int32
			hit := make(chan struct{}, 1)
			release := make(chan struct{})
			webhook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hits.Add(1) == 1 {
					hit <- struct{}{}
					<-release // the effect is under way when the process dies
				}
				fmt.Fprint(w, `{"ok":true}`)
			}))
			defer webhook.Close()
			defer close(release)

			llm := llmtest.NewOpenAI(t)
			first := llmtest.Hang() // generating, no tool call yet
			crashPoint := func() { <-first.Started() }
			if effectful {
				llm.Enqueue(llmtest.ToolCall("call_hook", "send_webhook", `{"payload":{"order":42}}`))
				crashPoint = func() { <-hit }
			} else {
				llm.Enqueue(first)
			}
			llm.Enqueue(llmtest.TextChunks("The shop was notified."))

			sub := t.TempDir()
			db := filepath.Join(sub, "chatd.db")
			addr := freeAddr(t)
			token := "retry-test-token"
			env := []string{"CHATD_DB=" + db, "CHATD_ADDR=" + addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
				"OPENAI_BASE_URL=" + llm.URL, "CHATD_DEFAULT_MODEL=openai/test-model", "CHATD_WEBHOOK_URL=" + webhook.URL}
			srv := startServer(t, bin, env, addr)
			direct := sdk.New("http://"+addr, token)
			chat, err := direct.CreateChat(ctx, sdk.CreateChatRequest{Title: "shop"})
			require.NoError(t, err)

			id := uuid.New()
			proxy := &crashProxy{upstream: addr, requestID: id, crashPoint: crashPoint, killed: make(chan struct{}), kill: func() {
				_ = srv.cmd.Process.Signal(syscall.SIGKILL)
				<-srv.done
			}}
			front := httptest.NewServer(proxy)
			defer front.Close()
			client := sdk.New(front.URL, token)
			req := sdk.CreateChatMessageRequest{Content: sdk.Text("notify the shop")}
			// Enough attempts to outlast the restart; each waits 50 ms.
			policy := sdk.RetryPolicy{Attempts: 1200, Backoff: func(int) time.Duration { return 50 * time.Millisecond }}

			type answer struct {
				resp sdk.CreateChatMessageResponse
				err  error
			}
			first1 := make(chan answer, 1)
			go func() {
				resp, err := client.SendWithID(ctx, chat.ID, id, req, policy)
				first1 <- answer{resp, err}
			}()
			<-proxy.killed
			srv = startServer(t, bin, env, addr)

			// The client goes on retrying the same id until the answer is
			// definite: in progress means "ask again".
			a := <-first1
			require.Eventually(t, func() bool {
				var e *sdk.Error
				if errors.As(a.err, &e) && e.Code == sdk.CodeInvocationInProgress {
					a.resp, a.err = client.SendWithID(ctx, chat.ID, id, req, policy)
					return false
				}
				return true
			}, time.Minute, 20*time.Millisecond, "the request never ended:\n%s", srv.out)

			if effectful {
				var e *sdk.Error
				require.True(t, errors.As(a.err, &e), "want INVOCATION_UNRESOLVED, got %v", a.err)
				require.Equal(t, sdk.CodeInvocationUnresolved, e.Code, e.Error())
				require.Equal(t, id, *e.RequestID)
				require.NotNil(t, e.AuditID)
				// The journal entry to review, beside the running server.
				var raw bytes.Buffer
				require.NoError(t, run(ctx, []string{"invocation", "inspect", "--db", db, "--request-id", id.String()}, &raw, &raw))
				var in admin.Inspection
				require.NoError(t, json.Unmarshal(raw.Bytes(), &in), raw.String())
				require.Equal(t, "unresolved", in.Claim.State)
				require.Len(t, in.Journal, 1)
				require.Equal(t, "send_webhook", in.Journal[0].ToolName)
				require.Equal(t, store.JournalUnresolved, in.Journal[0].State)
				require.Equal(t, int32(1), hits.Load(), "the effect happened once")
			} else {
				require.NoError(t, a.err)
				require.NotNil(t, a.resp.Replayed)
				require.True(t, *a.resp.Replayed, "the saved answer of the admitted request")
				require.Equal(t, id, *a.resp.RequestID)
				res, err := client.LookupRequest(ctx, id, sdk.LookupOptions{})
				require.NoError(t, err)
				require.Equal(t, "completed", res.Outcome.Status)
				require.Equal(t, "The shop was notified.", res.Messages[len(res.Messages)-1].Content[0].Text)
				require.Zero(t, hits.Load(), "no effect")
			}

			page, err := direct.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
			require.NoError(t, err)
			users := 0
			for _, m := range page.Messages {
				if m.Role == "user" {
					users++
					require.Equal(t, id, *m.RequestID, "the one message is the request's")
				}
			}
			require.Equal(t, 1, users, "exactly one message across the crash and the retries")
			require.Empty(t, page.QueuedMessages)
		})
	}
}
