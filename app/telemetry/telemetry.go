// Package telemetry sets up OpenTelemetry tracing and metrics from the
// standard OTEL_* environment variables. Both are off unless an OTLP
// endpoint is set; the metrics are the GenAI ones (gen_ai.client.*, the
// worker records them), chatd's own stay on Prometheus /metrics.
// It also measures the store's transactions (store.go).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name traces carry unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "chatd"

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL (and its _TRACES_ variant).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Settings are what the environment says about tracing.
type Settings struct {
	// Enabled: an OTLP endpoint is set, the SDK is not disabled, and
	// OTEL_TRACES_EXPORTER is otlp (its default) rather than none.
	Enabled bool
	// Protocol is ProtocolHTTP (the OTLP default) or ProtocolGRPC.
	Protocol string
}

// Read interprets the standard variables through getenv:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turn
// tracing on; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none keep it
// off; OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// picks the protocol. An exporter or protocol chatd does not speak is an
// error rather than silently no traces.
func Read(getenv func(string) string) (Settings, error) {
	s := Settings{Protocol: ProtocolHTTP}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return s, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return s, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp":
	case "none":
		return s, nil
	default:
		return s, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: chatd exports traces with otlp only (or none)", e)
	}
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p = strings.TrimSpace(p); p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		s.Protocol = ProtocolGRPC
	default:
		return s, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want %s or %s", p, ProtocolHTTP, ProtocolGRPC)
	}
	s.Enabled = true
	return s, nil
}

// Tracing is a tracer provider, a meter provider and what stops them.
type Tracing struct {
	// Provider is nil when tracing is off.
	Provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider
	// Meter is nil when OTLP metrics are off.
	Meter  metric.MeterProvider
	meters *sdkmetric.MeterProvider
}

// Shutdown flushes the spans and metrics still batched and stops the
// exporters.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.sdk != nil {
		if err := t.sdk.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut tracing down: %w", err))
		}
	}
	if t.meters != nil {
		if err := t.meters.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut OTLP metrics down: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ReadMetrics is Read for the metrics signal: OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT turn OTLP metrics on,
// OTEL_SDK_DISABLED=true or OTEL_METRICS_EXPORTER=none keep them off,
// OTEL_EXPORTER_OTLP_METRICS_PROTOCOL (else OTEL_EXPORTER_OTLP_PROTOCOL)
// picks the protocol.
func ReadMetrics(getenv func(string) string) (Settings, error) {
	s := Settings{Protocol: ProtocolHTTP}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
		return s, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return s, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); e {
	case "", "otlp":
	case "none", "prometheus": // chatd's /metrics is Prometheus already
		return s, nil
	default:
		return s, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: chatd exports GenAI metrics with otlp only (or none)", e)
	}
	p := getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p = strings.TrimSpace(p); p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		s.Protocol = ProtocolGRPC
	default:
		return s, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want %s or %s", p, ProtocolHTTP, ProtocolGRPC)
	}
	s.Enabled = true
	return s, nil
}

// metricsFromEnv starts the OTLP metrics pipeline as ReadMetrics says: a
// periodic reader (OTEL_METRIC_EXPORT_INTERVAL) over the exporter of the
// protocol, on res.
func metricsFromEnv(ctx context.Context, getenv func(string) string, res *resource.Resource) (*sdkmetric.MeterProvider, error) {
	s, err := ReadMetrics(getenv)
	if err != nil || !s.Enabled {
		return nil, err
	}
	var exp sdkmetric.Exporter
	switch s.Protocol {
	case ProtocolGRPC:
		exp, err = otlpmetricgrpc.New(ctx)
	default:
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP metric exporter (%s): %w", s.Protocol, err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res)), nil
}

// FromEnv starts tracing as the environment says (Read): an OTLP exporter
// for the protocol, configured by the exporter from the rest of the
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, TLS, timeout), a
// batch span processor (OTEL_BSP_*), the sampler of OTEL_TRACES_SAMPLER
// (parent-based always-on by default) and the resource of
// OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES. Off, it returns a Tracing
// with a nil Provider. The exporter connects lazily: an unreachable
// collector loses spans, it does not stop chatd.
func FromEnv(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	s, err := Read(getenv)
	if err != nil {
		return &Tracing{}, err
	}
	ms, err := ReadMetrics(getenv)
	if err != nil || !s.Enabled && !ms.Enabled {
		return &Tracing{}, err
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, err
	}
	meters, err := metricsFromEnv(ctx, getenv, res)
	if err != nil {
		return nil, err
	}
	out := &Tracing{}
	if meters != nil {
		out.Meter, out.meters = meters, meters
	}
	if !s.Enabled {
		return out, nil
	}
	var exp sdktrace.SpanExporter
	switch s.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("OTLP trace exporter (%s): %w", s.Protocol, err), out.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	out.Provider, out.sdk = tp, tp
	return out, nil
}

// newResource is service.name chatd, merged with OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context) (*resource.Resource, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", ServiceName)))
	if err == nil {
		var env *resource.Resource
		env, err = resource.New(ctx, resource.WithFromEnv())
		if err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}
