package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
)

// server is a chatd process under test.
type server struct {
	cmd  *exec.Cmd
	out  *apptest.LogBuffer
	done chan struct{} // closed when the process has exited
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func startServer(t *testing.T, bin string, env []string, addr string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(bin, "serve"), out: &apptest.LogBuffer{}, done: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	require.NoError(t, s.cmd.Start())
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); <-s.done })
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "chatd did not start:\n%s", s.out)
	return s
}

// TestKilledDuringEffectfulToolCall: a process SIGKILLed while an
// effectful tool runs leaves its request unresolved after the restart (the
// call is never run twice); an operator's reconcile lets the chat go on and
// keeps the request closed to execution.
func TestKilledDuringEffectfulToolCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := chatdBinary(t)

	var hits atomic.Int32
	hit := make(chan struct{}, 1)
	release := make(chan struct{})
	webhook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			hit <- struct{}{}
			<-release // the side effect is under way when the process dies
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer webhook.Close()
	defer close(release)

	llm := llmtest.NewOpenAI(t)
	llm.Enqueue(llmtest.ToolCall("call_hook", "send_webhook", `{"payload":{"order":42}}`))
	llm.Enqueue(llmtest.TextChunks("The webhook was handled."))

	db := filepath.Join(dir, "chatd.db")
	addr := freeAddr(t)
	token := "durable-test-token"
	env := []string{"CHATD_DB=" + db, "CHATD_ADDR=" + addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
		"OPENAI_BASE_URL=" + llm.URL, "CHATD_DEFAULT_MODEL=openai/test-model", "CHATD_WEBHOOK_URL=" + webhook.URL}
	client := sdk.New("http://"+addr, token)

	srv := startServer(t, bin, env, addr)
	requestID := uuid.New()
	var created sdk.CreateChatResponse
	require.NoError(t, client.Do(ctx, http.MethodPost, "/chats",
		map[string]any{"content": sdk.Text("notify the shop"), "request_id": requestID, "title": "shop"}, &created))
	select {
	case <-hit:
	case <-ctx.Done():
		t.Fatalf("the tool never ran:\n%s", srv.out)
	}
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	<-srv.done

	// The restarted process takes the chat over and refuses to run the
	// effectful call again.
	srv = startServer(t, bin, env, addr)
	sum := sha256.Sum256([]byte("notify the shop"))
	lookup := "/requests/" + requestID.String() + "?content_sha256=" + hex.EncodeToString(sum[:])
	require.Eventually(t, func() bool {
		err := client.Do(ctx, http.MethodGet, lookup, nil, nil)
		var e *sdk.Error
		return errors.As(err, &e) && e.Code == sdk.CodeInvocationUnresolved
	}, 30*time.Second, 20*time.Millisecond, "request never became unresolved:\n%s", srv.out)
	chat, err := client.Chat(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, sdk.ChatStatusRequiresAction, chat.Status, "stopped for review")
	require.Nil(t, chat.RequiresActionDeadlineAt, "a review has no deadline")
	require.Equal(t, int32(1), hits.Load(), "the effectful call ran once")

	// The operator inspects and reconciles with the server stopped.
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	<-srv.done
	var inspected bytes.Buffer
	require.NoError(t, run(ctx, []string{"invocation", "inspect", "--db", db, "--request-id", requestID.String()}, &inspected, &inspected))
	var view struct {
		Claim   struct{ State string }
		Journal []struct {
			ToolName string `json:"ToolName"`
			State    string `json:"State"`
			Effect   string `json:"Effect"`
		} `json:"tool_journal"`
	}
	require.NoError(t, json.Unmarshal(inspected.Bytes(), &view), inspected.String())
	require.Equal(t, "unresolved", view.Claim.State)
	require.Len(t, view.Journal, 1)
	require.Equal(t, "send_webhook", view.Journal[0].ToolName)
	require.Equal(t, "unresolved", view.Journal[0].State)
	require.Equal(t, "effectful", view.Journal[0].Effect)

	review := filepath.Join(dir, "review.json")
	require.NoError(t, os.WriteFile(review, []byte(`{"assessment":"the shop received order 42","result":{"delivered":true}}`), 0o600))
	var rec bytes.Buffer
	require.NoError(t, run(ctx, []string{"invocation", "reconcile", "--db", db, "--request-id", requestID.String(), "--review", review}, &rec, &rec))
	require.Contains(t, rec.String(), "reconciled")

	srv = startServer(t, bin, env, addr)
	require.Eventually(t, func() bool {
		c, err := client.Chat(ctx, created.ID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}, 30*time.Second, 20*time.Millisecond, "the chat never continued:\n%s", srv.out)
	page, err := client.ChatMessages(ctx, created.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	last := page.Messages[len(page.Messages)-1]
	require.Equal(t, "The webhook was handled.", last.Content[0].Text)
	reqs := llm.Requests()
	require.Contains(t, string(reqs[len(reqs)-1].Body), `delivered`, "the model saw the reviewed result")
	err = client.Do(ctx, http.MethodGet, lookup, nil, nil)
	var e *sdk.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, sdk.CodeInvocationReconciled, e.Code, "the id stays closed to execution")
	require.Equal(t, int32(1), hits.Load(), "never run twice")
	require.False(t, strings.Contains(srv.out.String(), "panic"), srv.out.String())
}
