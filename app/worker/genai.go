package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/chatd/chatd/app/llm"
)

// OpenTelemetry's GenAI semantic conventions (semconv v1.41.0, genaiconv):
// every provider call is a client span named "{gen_ai.operation.name}
// {gen_ai.request.model}" (operation chat), beside chatd's own stage
// spans, and every server-side tool run an "execute_tool {tool}" span;
// the gen_ai.client.token.usage and gen_ai.client.operation.duration
// histograms are recorded on the worker's meter. Message contents stay
// out of the spans unless Config.TraceContent is set (an admin's opt-in).
type genAI struct {
	tracer   trace.Tracer
	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
	content  bool
}

func newGenAI(tp trace.TracerProvider, mp metric.MeterProvider, content bool) genAI {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	g := genAI{tracer: tp.Tracer(TracerName), content: content}
	if mp != nil {
		m := mp.Meter(TracerName)
		// Errors leave a noop instrument: metrics never stop a turn.
		g.tokens, _ = genaiconv.NewClientTokenUsage(m)
		g.duration, _ = genaiconv.NewClientOperationDuration(m)
	} else {
		g.tokens, _ = genaiconv.NewClientTokenUsage(nil)
		g.duration, _ = genaiconv.NewClientOperationDuration(nil)
	}
	return g
}

// genAICall is one provider call's span and clock.
type genAICall struct {
	g        genAI
	span     trace.Span
	provider string
	model    string
	start    time.Time
}

// call opens the client span of a chat call of model on provider.
func (g genAI) call(ctx context.Context, provider string, req llm.Request, now time.Time, extra ...attribute.KeyValue) (context.Context, *genAICall) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(string(genaiconv.OperationNameChat)),
		semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIRequestModel(req.Model),
	}
	if req.MaxOutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxOutputTokens))
	}
	attrs = append(attrs, extra...)
	if g.content {
		if raw, err := json.Marshal(req.Messages); err == nil {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(string(raw)))
		}
	}
	ctx, span := g.tracer.Start(ctx, string(genaiconv.OperationNameChat)+" "+req.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	return ctx, &genAICall{g: g, span: span, provider: provider, model: req.Model, start: now}
}

// end closes the call's span with what the provider reported and records
// the duration and, on success, the token usage.
func (c *genAICall) end(ctx context.Context, resp llm.Response, err error, now time.Time) {
	op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAttr(c.provider)
	metricAttrs := []attribute.KeyValue{semconv.GenAIRequestModel(c.model)}
	if resp.Model != "" {
		metricAttrs = append(metricAttrs, semconv.GenAIResponseModel(resp.Model))
	}
	if err != nil {
		c.span.SetStatus(codes.Error, err.Error())
		c.span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		c.g.duration.Record(ctx, now.Sub(c.start).Seconds(), op, prov, append(metricAttrs, semconv.ErrorTypeKey.String(errorType(err)))...)
		c.span.End(trace.WithTimestamp(now))
		return
	}
	u := resp.Usage
	attrs := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
	}
	if resp.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(resp.Model))
	}
	if resp.ID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(resp.ID))
	}
	if resp.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(resp.FinishReason))
	}
	if u.CacheReadTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadTokens)))
	}
	if u.ReasoningTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(int(u.ReasoningTokens)))
	}
	if c.g.content {
		if raw, err := json.Marshal(resp.Parts); err == nil {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(string(raw)))
		}
	}
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(now))
	c.g.duration.Record(ctx, now.Sub(c.start).Seconds(), op, prov, metricAttrs...)
	c.g.tokens.Record(ctx, u.InputTokens, op, prov, genaiconv.TokenTypeInput, metricAttrs...)
	c.g.tokens.Record(ctx, u.OutputTokens, op, prov, genaiconv.TokenTypeOutput, metricAttrs...)
}

// errorType is error.type: the provider error's kind, else "_OTHER".
func errorType(err error) string {
	var e *llm.Error
	if errors.As(err, &e) && e.Kind != "" {
		return string(e.Kind)
	}
	return "_OTHER"
}

// tool opens the execute_tool span of one server-side tool run.
func (g genAI) tool(ctx context.Context, name, callID string, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	return g.tracer.Start(ctx, string(genaiconv.OperationNameExecuteTool)+" "+name, trace.WithAttributes(append([]attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(string(genaiconv.OperationNameExecuteTool)),
		semconv.GenAIToolName(name), semconv.GenAIToolCallID(callID),
		semconv.GenAIToolTypeKey.String("function"),
	}, extra...)...))
}

// spanScope is what every span of the runner's turn carries: its scope,
// chat kind and chat id.
func (r *runner) spanScope() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("scope", ScopeTurn), attribute.String("chat_kind", r.kind), r.chatAttr()}
}
