package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestRead: tracing is off by default and on with an OTLP endpoint; the
// protocol follows the standard variables, and what chatd cannot export
// is an error.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    telemetry.Settings
		wantErr string
	}{
		{name: "nothing set: off", env: nil, want: telemetry.Settings{Protocol: telemetry.ProtocolHTTP}},
		{name: "endpoint: on, http", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			want: telemetry.Settings{Enabled: true, Protocol: telemetry.ProtocolHTTP}},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"},
			want: telemetry.Settings{Enabled: true, Protocol: telemetry.ProtocolHTTP}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: telemetry.Settings{Enabled: true, Protocol: telemetry.ProtocolGRPC}},
		{name: "the traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			want: telemetry.Settings{Enabled: true, Protocol: telemetry.ProtocolHTTP}},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"},
			want: telemetry.Settings{Protocol: telemetry.ProtocolHTTP}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"},
			want: telemetry.Settings{Protocol: telemetry.ProtocolHTTP}},
		{name: "unknown exporter", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "zipkin"},
			wantErr: "otlp only"},
		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: "want http/protobuf or grpc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := telemetry.Read(env(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestFromEnvOff: without an endpoint there is no provider, and shutting
// down is a no-op.
func TestFromEnvOff(t *testing.T) {
	tr, err := telemetry.FromEnv(context.Background(), env(nil))
	require.NoError(t, err)
	require.Nil(t, tr.Provider)
	require.NoError(t, tr.Shutdown(context.Background()))
}

// TestFromEnvExportsOverHTTP: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans
// reach the collector over OTLP/HTTP at /v1/traces, flushed by Shutdown,
// with the service name chatd.
func TestFromEnvExportsOverHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths, bodies = append(paths, r.URL.Path), append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := telemetry.FromEnv(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return srv.URL
		}
		return ""
	})
	require.NoError(t, err)
	require.NotNil(t, tr.Provider)
	_, span := tr.Provider.Tracer("test").Start(context.Background(), "chat_turn")
	span.End()
	require.NoError(t, tr.Shutdown(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "/v1/traces", paths[0], "spans first; the GenAI metrics follow on /v1/metrics")
	require.Contains(t, string(bodies[0]), "chat_turn")
	require.Contains(t, string(bodies[0]), "chatd", "service.name")
}
