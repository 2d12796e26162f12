package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/worker"
)

// describing is a Registerer that records the metric names registered on
// it, so families without a series yet (a vector nothing observed) count.
type describing struct{ names map[string]bool }

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := descName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return nil
}

func (d describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (describing) Unregister(prometheus.Collector) bool { return false }

// dashboardExprs are the PromQL expressions of the dashboard's panels.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../docs/grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is JSON")
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, p.Title)
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// TestGrafanaDashboard: docs/grafana-dashboard.json parses, and every
// chatd metric its queries name is one the app registers (histograms by
// their _bucket, _sum and _count series), so the dashboard cannot drift
// from the code silently.
func TestGrafanaDashboard(t *testing.T) {
	h := apptest.Start(t, apptest.Options{NoStart: true})
	// One request gives the HTTP families a series.
	res, err := http.Get(h.URL + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	registered := map[string]bool{}
	fams, err := h.Metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		registered[f.GetName()] = true
	}
	// The worker's vectors have no series before a turn: take their names
	// from their descriptions.
	worker.NewMetrics(describing{registered})

	used := map[string]bool{}
	name := regexp.MustCompile(`\bchatd_[a-z_]+`)
	for _, e := range dashboardExprs(t) {
		for _, n := range name.FindAllString(e, -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suffix); ok && registered[base] {
					n = base
				}
			}
			used[n] = true
			require.True(t, registered[n], "the dashboard queries %s, which chatd does not register (in %s)", n, e)
		}
	}
	for _, must := range []string{"chatd_stage_duration_seconds", "chatd_model_stage_duration_seconds", "chatd_turn_outcomes_total",
		"chatd_queue_depth", "chatd_store_tx_duration_seconds", "chatd_pubsub_notifications_total"} {
		require.True(t, used[must], "the dashboard shows %s", must)
	}
}
