package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Cost is one line of a sequential turn's breakdown: how often something
// happened per turn and the time it took per turn, from the deltas of
// chatd's own histograms (stage, store transaction and HTTP metrics)
// across the sequential turns.
type Cost struct {
	// What names the histogram series: "stage commit (turn)", "store tx
	// write", "http POST /api/v2/chats/{chat}/messages".
	What string
	// PerTurn is the observation count per turn; MSPerTurn the summed
	// duration per turn in milliseconds.
	PerTurn, MSPerTurn float64
}

// series is one histogram's _sum and _count.
type series struct{ sum, count float64 }

// scrape reads the server's /metrics (the bench user is an admin) and
// keeps the histograms a turn's breakdown is made of, by display name.
func (e *runEnv) scrape(ctx context.Context) (map[string]series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: HTTP %d", resp.StatusCode)
	}
	return parseHistograms(resp.Body)
}

// breakdownFamilies maps the histogram families of a turn to how their
// series are named: the labels that tell series apart.
var breakdownFamilies = map[string]func(labels map[string]string) string{
	"chatd_stage_duration_seconds": func(l map[string]string) string {
		return "stage " + l["stage"] + " (" + l["scope"] + ")"
	},
	"chatd_store_tx_duration_seconds": func(l map[string]string) string { return "store tx " + l["tx"] },
	"chatd_http_request_duration_seconds": func(l map[string]string) string {
		if strings.Contains(l["route"], "/metrics") {
			return "" // the scrape itself
		}
		return "http " + l["route"]
	},
}

// parseHistograms reads the Prometheus text format and returns the _sum
// and _count of every series of breakdownFamilies.
func parseHistograms(r io.Reader) (map[string]series, error) {
	out := map[string]series{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := parseSample(line)
		if !ok {
			continue
		}
		family, field := "", ""
		for _, suffix := range []string{"_sum", "_count"} {
			if f, found := strings.CutSuffix(name, suffix); found {
				family, field = f, suffix
			}
		}
		naming, wanted := breakdownFamilies[family]
		if !wanted {
			continue
		}
		what := naming(labels)
		if what == "" {
			continue
		}
		s := out[what]
		if field == "_sum" {
			s.sum += value
		} else {
			s.count += value
		}
		out[what] = s
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

// parseSample splits `name{k="v",...} value` (labels optional).
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	labels = map[string]string{}
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", nil, 0, false
		}
		name, rest = line[:i], line[j+1:]
		for _, kv := range splitLabels(line[i+1 : j]) {
			k, v, found := strings.Cut(kv, "=")
			if !found {
				return "", nil, 0, false
			}
			uq, err := strconv.Unquote(v)
			if err != nil {
				return "", nil, 0, false
			}
			labels[k] = uq
		}
	} else {
		var found bool
		name, rest, found = strings.Cut(line, " ")
		if !found {
			return "", nil, 0, false
		}
		rest = " " + rest
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// splitLabels splits a label list at the commas outside quoted values.
func splitLabels(s string) []string {
	var out []string
	start, quoted, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// costs turns two scrapes around n turns into per-turn costs, the series
// that did not move left out, largest time first.
func costs(before, after map[string]series, n int) []Cost {
	if n <= 0 {
		return nil
	}
	var out []Cost
	for what, a := range after {
		b := before[what]
		dc := a.count - b.count
		if dc <= 0 {
			continue
		}
		out = append(out, Cost{What: what, PerTurn: dc / float64(n), MSPerTurn: (a.sum - b.sum) * 1000 / float64(n)})
	}
	slices.SortFunc(out, func(x, y Cost) int {
		if x.MSPerTurn != y.MSPerTurn {
			if x.MSPerTurn > y.MSPerTurn {
				return -1
			}
			return 1
		}
		return strings.Compare(x.What, y.What)
	})
	return out
}

// writeBreakdown prints a sequential turn's costs under the report.
func writeBreakdown(b *strings.Builder, cs []Cost) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "breakdown of one sequential turn (chatd's metrics, per turn; stages overlap: chat_turn contains the others)\n")
	fmt.Fprintf(b, "  %-58s %8s %10s\n", "series", "n/turn", "ms/turn")
	for _, c := range cs {
		fmt.Fprintf(b, "  %-58s %8.2f %10.3f\n", c.What, c.PerTurn, c.MSPerTurn)
	}
}
