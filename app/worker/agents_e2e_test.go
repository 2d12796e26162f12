package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools/agents"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// parentMarker is in the parent's prompt of these tests (and so in every
// request of the parent's), childMarker in the child's.
const (
	parentMarker = "Ask a subagent"
	childMarker  = "CHILD TASK"
)

// familyRouter forwards the parent's model requests (their body holds
// parentMarker) to the parent's server and the others to the child's;
// the parent's requests after the first wait until ready is closed, so a
// test can script them once it knows the parent's id.
type familyRouter struct {
	URL           string
	parent, child *url.URL
	ready         chan struct{}
	mu            sync.Mutex
	parentCalls   int
}

func newFamilyRouter(t testing.TB, parent, child *llmtest.Server) *familyRouter {
	t.Helper()
	root := func(s *llmtest.Server) *url.URL {
		u, err := url.Parse(s.URL)
		require.NoError(t, err)
		return &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	r := &familyRouter{parent: root(parent), child: root(child), ready: make(chan struct{})}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *familyRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.child
	if bytes.Contains(body, []byte(parentMarker)) {
		target = r.parent
	}
	if target == r.parent {
		r.mu.Lock()
		r.parentCalls++
		n := r.parentCalls
		r.mu.Unlock()
		if n > 1 {
			select {
			case <-r.ready:
			case <-req.Context().Done():
				return
			}
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1,
		ErrorHandler:  func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	proxy.ServeHTTP(w, req)
}

// TestSubagentFamilyOverHTTP: through the real server and each provider's
// fake wire server, a root chat spawns a child, the child runs and
// answers, wait_agent returns the answer, and the parent finishes with
// it. The family rules then hold for the real child: archive and
// unarchive the family together, and deleting the root deletes it.
func TestSubagentFamilyOverHTTP(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				parentSrv := prov.newServer(t, llmtest.Join(llmtest.TextChunks("Delegating."),
					llmtest.ToolCall("call_spawn", "spawn_agent", `{"prompt":"`+childMarker+`: add 2 and 2","title":"Adder"}`)))
				childSrv := prov.newServer(t, llmtest.TextChunks("It is ", "4."))
				router := newFamilyRouter(t, parentSrv, childSrv)
				token := auth.NewToken()
				cfg := config.Config{BootstrapToken: token, Worker: fastWorker()}
				cfg.Worker.Subagents = true
				prov.configure(&cfg, router.URL)
				e := &fixture{t: t, ctx: ctx, prov: prov}
				e.start(t, newStore(t), cfg)
				e.c = &sdk.Client{BaseURL: e.srv.URL, Token: token, HTTP: e.srv.Client()}

				parent := e.create(sdk.CreateChatRequest{Content: sdk.Text(parentMarker + " what 2+2 is.")})
				childID := agents.SubagentID(parent.ID, "call_spawn")
				parentSrv.Enqueue(
					llmtest.ToolCall("call_wait", "wait_agent", `{"chat_ids":["`+childID.String()+`"],"timeout_seconds":60}`),
					llmtest.TextChunks("The subagent says 4."),
				)
				close(router.ready)

				done := e.waitStatus(parent.ID, sdk.ChatStatusWaiting)
				require.Nil(t, done.LastError)
				ms := e.messages(parent.ID)
				require.Equal(t, []string{"user", "assistant", "tool", "assistant", "tool", "assistant"}, roles(ms))
				require.Equal(t, "The subagent says 4.", text(ms[5]))

				reqs := parentSrv.Requests()
				require.Len(t, reqs, 3)
				spawned, ok := decodeRequest(t, reqs[1]).toolResult("call_spawn")
				require.True(t, ok)
				require.Contains(t, spawned, childID.String())
				waited, ok := decodeRequest(t, reqs[2]).toolResult("call_wait")
				require.True(t, ok, "the parent's next request carries the wait's result")
				var result struct {
					TimedOut bool `json:"timed_out"`
					Agents   []struct {
						ChatID            string `json:"chat_id"`
						Status            string `json:"status"`
						LastAssistantText string `json:"last_assistant_text"`
					} `json:"agents"`
				}
				require.NoError(t, json.Unmarshal([]byte(waited), &result), waited)
				require.False(t, result.TimedOut)
				require.Len(t, result.Agents, 1)
				require.Equal(t, childID.String(), result.Agents[0].ChatID)
				require.Equal(t, "waiting", result.Agents[0].Status)
				require.Equal(t, "It is 4.", result.Agents[0].LastAssistantText)

				child := e.chat(childID)
				require.Equal(t, parent.ID, *child.ParentChatID)
				require.Equal(t, parent.ID, *child.RootChatID)
				require.Equal(t, "Adder", child.Title)
				require.Equal(t, []string{"user: " + childMarker + ": add 2 and 2", "assistant: It is 4."}, transcript(e.messages(childID)))
				first := decodeRequest(t, childSrv.Requests()[0])
				require.NotContains(t, first.Tools, "spawn_agent", "a child at the depth limit cannot spawn")

				// Family rules with the real child.
				archived, unarchived := true, false
				require.NoError(t, e.c.UpdateChat(ctx, parent.ID, sdk.UpdateChatRequest{Archived: &archived}))
				require.True(t, e.chat(childID).Archived, "archiving the root archives its subagent")
				require.NoError(t, e.c.UpdateChat(ctx, parent.ID, sdk.UpdateChatRequest{Archived: &unarchived}))
				require.False(t, e.chat(childID).Archived, "unarchiving the root unarchives it")
				require.NoError(t, e.c.DeleteChat(ctx, parent.ID))
				_, err := e.c.Chat(ctx, childID)
				require.Error(t, err, "deleting the root deletes its subagent")
			})
		}
	})
}

// TestSubagentWaitSurvivesKill: the chatd process is killed (SIGKILL)
// while the parent waits for its child in wait_agent and the child is
// streaming. The next process on the same database takes both over: the
// child answers, the wait runs again and returns the answer, and the
// parent finishes; there is one child and one result per call.
func TestSubagentWaitSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx := context.Background()
	bin := buildChatd(t)
	parentSrv := llmtest.NewOpenAI(t, llmtest.ToolCall("call_spawn", "spawn_agent", `{"prompt":"`+childMarker+`: add 2 and 2","title":"Adder"}`))
	hang := llmtest.Join(llmtest.TextChunks("Half"), llmtest.Hang())
	childSrv := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("It is 4."))
	router := newFamilyRouter(t, parentSrv, childSrv)
	token := auth.NewToken()
	db := filepath.Join(t.TempDir(), "chatd.db")
	env := []string{"CHATD_SUBAGENTS=true"}

	first, c1 := startChatd(t, bin, db, token, router.URL+"/v1", env...)
	parent, err := c1.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text(parentMarker + " what 2+2 is."), Title: "kill"})
	require.NoError(t, err)
	childID := agents.SubagentID(parent.ID, "call_spawn")
	parentSrv.Enqueue(
		llmtest.ToolCall("call_wait", "wait_agent", `{"chat_ids":["`+childID.String()+`"],"timeout_seconds":600}`),
		llmtest.TextChunks("The subagent says 4."),
	)
	close(router.ready)
	waitClosed(t, hang.Started(), "the child to stream")
	require.Eventually(t, func() bool {
		resp, err := c1.ChatMessages(ctx, parent.ID, sdk.MessagesOptions{Limit: 100})
		return err == nil && len(resp.Messages) == 4 // user, spawn call, its result, the wait call
	}, 30*time.Second, 10*time.Millisecond, "the parent calls wait_agent")
	require.NoError(t, first.cmd.Process.Kill())
	first.wait()

	_, c2 := startChatd(t, bin, db, token, router.URL+"/v1", env...)
	done := waitClientStatus(t, c2, parent, sdk.ChatStatusWaiting)
	require.Nil(t, done.LastError)
	resp, err := c2.ChatMessages(ctx, parent.ID, sdk.MessagesOptions{Limit: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"user", "assistant", "tool", "assistant", "tool", "assistant"}, roles(resp.Messages))
	require.Equal(t, "The subagent says 4.", text(resp.Messages[5]))
	list, err := c2.ChatMessages(ctx, childID, sdk.MessagesOptions{Limit: 100})
	require.NoError(t, err)
	require.Equal(t, "It is 4.", text(list.Messages[len(list.Messages)-1]))
	waited, ok := decodeRequest(t, parentSrv.Requests()[2]).toolResult("call_wait")
	require.True(t, ok)
	require.Contains(t, waited, "It is 4.")
	require.Len(t, parentSrv.Requests(), 3)
}
