package redact

import (
	"context"
	"log/slog"
)

// Handler returns h with every known secret masked out of each record's
// message and attribute values (strings, errors and anything else printed
// as text), so a secret that slipped into a log line from any part of
// chatd stays out of the log.
func (s *Secrets) Handler(h slog.Handler) slog.Handler {
	return &handler{h: h, s: s}
}

type handler struct {
	h slog.Handler
	s *Secrets
}

func (l *handler) Enabled(ctx context.Context, level slog.Level) bool { return l.h.Enabled(ctx, level) }

func (l *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, l.s.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = l.attr(a)
	}
	return &handler{h: l.h.WithAttrs(masked), s: l.s}
}

func (l *handler) WithGroup(name string) slog.Handler {
	return &handler{h: l.h.WithGroup(name), s: l.s}
}

// attr is a with its value masked. Numbers, booleans, times and durations
// cannot hold a secret and pass unchanged.
func (l *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, l.s.Text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]slog.Attr, len(group))
		for i, g := range group {
			masked[i] = l.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(masked...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			text := x.Error()
			if clean := l.s.Text(text); clean != text {
				return slog.String(a.Key, clean)
			}
		default:
			text := v.String()
			if clean := l.s.Text(text); clean != text {
				return slog.String(a.Key, clean)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
