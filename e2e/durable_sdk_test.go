package e2e_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// lossyProxy forwards to the server and loses the answers of POSTs on
// demand: before the server sees the request, or after it answered.
type lossyProxy struct {
	mu          sync.Mutex
	loseBefore  int // POSTs dropped before reaching the server
	loseAfter   int // POSTs whose answer is dropped after the server answered
	posts, gets int
}

// lose resets the counts and loses the next before and after answers.
func (p *lossyProxy) lose(before, after int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseBefore, p.loseAfter, p.posts, p.gets = before, after, 0, 0
}

// counts returns the POSTs and other requests seen since lose.
func (p *lossyProxy) counts() (posts, gets int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posts, p.gets
}

func (d *fixture) lossy(t *testing.T) (*lossyProxy, *sdk.Client) {
	t.Helper()
	target, err := url.Parse(d.srv.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	tr := &http.Transport{}
	rp.Transport = tr
	p := &lossyProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		var before, after bool
		if r.Method == http.MethodPost {
			p.posts++
			before, after = p.loseBefore > 0, p.loseBefore == 0 && p.loseAfter > 0
			if before {
				p.loseBefore--
			} else if after {
				p.loseAfter--
			}
		} else {
			p.gets++
		}
		p.mu.Unlock()
		if after {
			rp.ServeHTTP(httptest.NewRecorder(), r)
		}
		if before || after {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	c := sdk.New(srv.URL, d.alice.Token)
	return p, c
}

var noWait = sdk.RetryPolicy{Attempts: 4, Backoff: func(int) time.Duration { return 0 }}

// SendWithID and CreateChatWithID retry a lost answer with the same id,
// after a lookup: exactly one message, one chat, one turn.
func TestSDKSendWithID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		proxy, c := d.lossy(t)

		// Lost before admission: the lookup finds nothing, the same id is sent again.
		proxy.lose(1, 0)
		id := uuid.New()
		made, err := c.CreateChatWithID(d.ctx, id, sdk.CreateChatRequest{Title: "sdk"}, noWait)
		require.NoError(t, err)
		require.False(t, *made.Replayed)
		require.Equal(t, id, *made.RequestID)
		posts, gets := proxy.counts()
		require.Equal(t, 2, posts)
		require.Equal(t, 1, gets, "one lookup between the sends")

		// Lost after admission: the lookup returns the saved answer, nothing is sent again.
		proxy.lose(0, 1)
		id2 := uuid.New()
		again, err := c.CreateChatWithID(d.ctx, id2, sdk.CreateChatRequest{Title: "sdk 2"}, noWait)
		require.NoError(t, err)
		require.True(t, *again.Replayed)
		require.Equal(t, id2, *again.RequestID)
		require.NotEqual(t, uuid.Nil, again.ID)
		posts, _ = proxy.counts()
		require.Equal(t, 1, posts, "an admitted request is not sent again")
		chats, err := d.alice.ListChats(d.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Len(t, chats, 2, "one chat per request")

		// A send whose answer is lost while its turn runs: in progress, one message.
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		proxy.lose(0, 1)
		sid := uuid.New()
		req := sdk.CreateChatMessageRequest{Content: sdk.Text("hello")}
		_, err = c.SendWithID(d.ctx, made.ID, sid, req, noWait)
		e := requireCode(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.Equal(t, sid, *e.RequestID)
		require.NotNil(t, e.AuditID)
		posts, _ = proxy.counts()
		require.Equal(t, 1, posts)
		<-hang.Started()
		page, err := d.alice.ChatMessages(d.ctx, made.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Len(t, page.Messages, 1, "exactly one message")
		require.Equal(t, sid, *page.Messages[0].RequestID)

		// Once the turn has ended the lookup has the saved answer.
		_, err = d.alice.Interrupt(d.ctx, made.ID)
		require.NoError(t, err)
		d.waitStatus(t, made.ID, sdk.ChatStatusWaiting)
		res, err := c.LookupRequest(d.ctx, sid, sdk.LookupOptions{ContentSHA256: sdk.ContentSHA256(req.Content)})
		require.NoError(t, err)
		require.True(t, res.Replayed)
		require.Equal(t, "interrupted", res.Outcome.Status)
		require.Equal(t, *e.AuditID, res.AuditID)
		replayed, err := c.SendWithID(d.ctx, made.ID, sid, req, noWait)
		require.NoError(t, err)
		require.True(t, *replayed.Replayed)
		require.Equal(t, sid, *replayed.Message.RequestID)

		// Other content under the same id is the server's definite answer.
		_, err = c.SendWithID(d.ctx, made.ID, sid, sdk.CreateChatMessageRequest{Content: sdk.Text("other")}, noWait)
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		_, err = c.LookupRequest(d.ctx, uuid.New(), sdk.LookupOptions{})
		requireCode(t, err, http.StatusNotFound, sdk.CodeInvocationNotFound)

		// Every attempt lost: the last error, and still at most one admission.
		proxy.lose(10, 0)
		_, err = c.SendWithID(d.ctx, made.ID, uuid.New(), sdk.CreateChatMessageRequest{Content: sdk.Text("never")}, noWait)
		require.True(t, sdk.Retryable(err), "%v", err)
		posts, _ = proxy.counts()
		require.Equal(t, 4, posts)
	})
}
