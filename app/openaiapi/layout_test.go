package openaiapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestLayoutResumesAnywhere: a client that followed a response live (the
// text growing a rune at a time) and was cut after any event, resumes
// from the stored response with no gap and no duplicate: the numbers
// derived live and after the commit agree.
func TestLayoutResumesAnywhere(t *testing.T) {
	t.Parallel()
	user := uuid.New()
	chat := sdk.Chat{ID: uuid.New(), Status: sdk.ChatStatusRunning}
	anchor := sdk.ChatMessage{ID: 7, Role: "user", CreatedBy: &user, CreatedAt: time.Unix(1, 0), Content: sdk.Text("Go")}
	const thought, answer = "Thinking…", "Hello, wörld ✓"
	msgs := []sdk.ChatMessage{anchor}

	// Live: the reasoning, then the answer, one rune more each time, as
	// the streamer sends them (each time only what is past its last event).
	var live []event
	last := int64(-1)
	step := func(parts []sdk.ChatMessagePart) {
		tr, ok := newTurn(chat, msgs, anchor.ID)
		require.True(t, ok)
		tr.live = parts
		for _, e := range tr.events(last) {
			live = append(live, e)
			last = e.seq
		}
	}
	for i := range []rune(thought) {
		step([]sdk.ChatMessagePart{{Type: sdk.PartReasoning, Text: string([]rune(thought)[:i+1])}})
	}
	for i := range []rune(answer) {
		step([]sdk.ChatMessagePart{{Type: sdk.PartReasoning, Text: thought}, {Type: sdk.PartText, Text: string([]rune(answer)[:i+1])}})
	}

	// Stored: the step committed and the turn finished.
	done := chat
	done.Status = sdk.ChatStatusWaiting
	stored := append(msgs, sdk.ChatMessage{ID: 8, Role: "assistant", CreatedAt: time.Unix(2, 0),
		Content: []sdk.ChatMessagePart{{Type: sdk.PartReasoning, Text: thought}, {Type: sdk.PartText, Text: answer}}})
	final, ok := newTurn(done, stored, anchor.ID)
	require.True(t, ok)
	final.outcome = &sdk.RequestOutcome{Status: "completed"}

	for cut := range live {
		var text strings.Builder
		var seqs []int64
		for _, e := range live[:cut+1] {
			seqs = append(seqs, e.seq)
			if e.typ == "response.output_text.delta" {
				text.WriteString(e.data["delta"].(string))
			}
		}
		rest := final.events(live[cut].seq)
		for _, e := range rest {
			seqs = append(seqs, e.seq)
			if e.typ == "response.output_text.delta" {
				text.WriteString(e.data["delta"].(string))
			}
		}
		require.Equal(t, answer, text.String(), "cut after event %d (%s)", cut, live[cut].typ)
		for i := 1; i < len(seqs); i++ {
			require.Greater(t, seqs[i], seqs[i-1], "cut after event %d", cut)
		}
		require.Equal(t, "response.completed", rest[len(rest)-1].typ)
	}
}
