package chatstate_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
)

var updateDiagram = flag.Bool("update-diagram", false, "rewrite the state diagram in docs/ARCHITECTURE.md from chatstate.Transitions()")

// TestDiagramDoc: the state diagram in docs/ARCHITECTURE.md is exactly the
// one chatstate.Transitions() draws. Regenerate it with
// `go test ./app/chatstate -run TestDiagramDoc -update-diagram`.
func TestDiagramDoc(t *testing.T) {
	const path = "../../docs/ARCHITECTURE.md"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)(<!-- state diagram: [^\n]*-->\n)(.*?)(<!-- end of state diagram -->)")
	m := re.FindStringSubmatch(string(raw))
	require.NotNil(t, m, "docs/ARCHITECTURE.md marks its generated state diagram")
	want := stateDiagram(chatstate.Transitions())
	if *updateDiagram {
		out := re.ReplaceAllLiteralString(string(raw), m[1]+want+m[3])
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	require.Equal(t, want, m[2], "docs/ARCHITECTURE.md's state diagram is stale: go test ./app/chatstate -run TestDiagramDoc -update-diagram")
}

// TestStateDiagramDrawsEveryTransition: every allowed (from, transition,
// to) triple is one labelled edge of the drawing, so the doc cannot leave
// one out.
func TestStateDiagramDrawsEveryTransition(t *testing.T) {
	d := chatstate.Transitions()
	out := stateDiagram(d)
	for from, trs := range d {
		for tr, tos := range trs {
			for _, to := range tos {
				edge := regexp.MustCompile(fmt.Sprintf(`(?m)^    %s --> %s : .*\b%s\b`,
					regexp.QuoteMeta(mermaidState(from)), regexp.QuoteMeta(mermaidState(to)), regexp.QuoteMeta(mermaidLabel(tr))))
				require.Regexp(t, edge, out, "%s -%s-> %s", from, tr, to)
			}
		}
	}
}

// stateDiagram draws the execution-state diagram as a Mermaid state
// diagram: one edge per (from, to) pair, labelled with every transition
// that may take it, sorted so the output is stable.
func stateDiagram(d map[chatstate.State]map[chatstate.Transition][]chatstate.State) string {
	type pair struct{ from, to chatstate.State }
	labels := map[pair][]string{}
	for from, trs := range d {
		for tr, tos := range trs {
			for _, to := range tos {
				p := pair{from, to}
				labels[p] = append(labels[p], mermaidLabel(tr))
			}
		}
	}
	pairs := make([]pair, 0, len(labels))
	for p := range labels {
		pairs = append(pairs, p)
	}
	order := func(s chatstate.State) int { return slices.Index(chatstate.AllStates, s) }
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := order(a.from) - order(b.from); c != 0 {
			return c
		}
		return order(a.to) - order(b.to)
	})
	var b strings.Builder
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	for _, p := range pairs {
		l := labels[p]
		slices.Sort(l)
		fmt.Fprintf(&b, "    %s --> %s : %s\n", mermaidState(p.from), mermaidState(p.to), strings.Join(slices.Compact(l), ", "))
	}
	b.WriteString("```\n")
	return b.String()
}

// mermaidState names a state as Mermaid allows: N, the chat that does not
// exist yet, is the diagram's start.
func mermaidState(s chatstate.State) string {
	if s == chatstate.StateN {
		return "[*]"
	}
	return string(s)
}

// mermaidLabel writes a transition without the parentheses Mermaid reads
// as syntax: SendMessage(queue) becomes SendMessage_queue.
func mermaidLabel(t chatstate.Transition) string {
	return strings.NewReplacer("(", "_", ")", "").Replace(string(t))
}
