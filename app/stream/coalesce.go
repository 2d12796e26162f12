package stream

import "bytes"

// A viewer that fell behind (its socket took a frame slowly, or it joined
// mid-episode) finds several parts waiting for it at its next write. The
// writer then merges each run of consecutive text deltas, and of
// reasoning deltas, into one message_part event: its text is theirs
// joined, its seq the last one's (API.md, Stream). Only what is already
// pending is merged: a viewer that keeps up gets each part alone, as it
// comes, with no timer and no wait.

// maxMergedText bounds the text of one merged event (its JSON string
// body), so that an event stays far below MaxFrameBytes.
const maxMergedText = 32 << 10

// Heads of the part encodings that may merge: json.Marshal of an
// sdk.ChatMessagePart with only Type and Text set (the buffer's
// encoding, relayed byte for byte).
var (
	textHead      = []byte(`{"type":"text","text":"`)
	reasoningHead = []byte(`{"type":"reasoning","text":"`)
)

// delta reports whether part is a text or reasoning delta with nothing
// but its text, and if so the length of its head (textHead or
// reasoningHead): its text's JSON string body is part[head:len(part)-2].
func delta(part []byte) (head int, ok bool) {
	switch {
	case bytes.HasPrefix(part, textHead):
		head = len(textHead)
	case bytes.HasPrefix(part, reasoningHead):
		head = len(reasoningHead)
	default:
		return 0, false
	}
	// The string must close right before the final brace: no other
	// field follows it. Inside a JSON string every quote is escaped.
	end := len(part) - 2
	if end < head || part[end] != '"' || part[end+1] != '}' {
		return 0, false
	}
	for i := head; i < end; i++ {
		switch part[i] {
		case '\\':
			i++ // the escaped byte, which must not be the closing quote
			if i == end {
				return 0, false
			}
		case '"':
			return 0, false
		}
	}
	return head, true
}

// run is the merged event the writer's batch ends with, while it may take
// more deltas: where its text's body ends in the batch, its head, and the
// size of its body.
type run struct {
	open    bool
	textEnd int
	head    []byte
	size    int
}

// appendDelta appends p, a delta of the current episode whose head has
// length head, to the batch: into the open run when its kind matches and
// it fits, else as a new event that opens a run.
func (w *writer) appendDelta(p relayPart, head int) {
	body := p.Part[head : len(p.Part)-2]
	if w.run.open && bytes.Equal(w.run.head, p.Part[:head]) && w.run.size+len(body) <= maxMergedText {
		// Cut the event's tail (the string's close, the part's brace, the
		// place) and write the body and a tail with p's seq.
		w.batch = append(w.batch[:w.run.textEnd], body...)
		w.run.textEnd = len(w.batch)
		w.run.size += len(body)
		w.batch = appendPartTail(append(w.batch, `"}`...), p)
		w.ends[len(w.ends)-1] = len(w.batch)
		return
	}
	start := len(w.batch)
	w.batch = appendPartEvent(w.batch, w.partPrefix, p)
	w.ends = append(w.ends, len(w.batch))
	w.run = run{open: true, textEnd: start + len(w.partPrefix) + len(p.Part) - 2, head: p.Part[:head], size: len(body)}
}
