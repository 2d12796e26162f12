package schedules

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/chatd/chatd/store"
)

// DefaultMinInterval is the shortest `every` (CHATD_MIN_SCHEDULE_INTERVAL).
const DefaultMinInterval = time.Minute

// maxRecordedSkips bounds the skipped due times one start records: a
// minutely schedule down for a month would otherwise write 40,000 rows.
const maxRecordedSkips = 100

// Timing is a parsed schedule: when it is due.
type Timing struct {
	kind  string
	loc   *time.Location
	cron  cron.Schedule
	every time.Duration
	at    time.Time
}

// ParseTiming reads a schedule's kind and spec (store.ScheduleCron,
// ScheduleEvery or ScheduleAt) in time zone tz (UTC when empty).
func ParseTiming(kind, spec, tz string, minEvery time.Duration) (Timing, error) {
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Timing{}, &InputError{Field: "timezone", Detail: fmt.Sprintf("%q is not a known IANA time zone", tz)}
	}
	t := Timing{kind: kind, loc: loc}
	switch kind {
	case store.ScheduleCron:
		if t.cron, err = cron.ParseStandard(spec); err != nil {
			return Timing{}, &InputError{Field: "cron", Detail: "not a five-field cron expression (minute hour day-of-month month day-of-week): " + err.Error()}
		}
	case store.ScheduleEvery:
		if t.every, err = time.ParseDuration(spec); err != nil {
			return Timing{}, &InputError{Field: "every", Detail: fmt.Sprintf("%q is not a Go duration such as 90m or 24h", spec)}
		}
		if t.every < minEvery {
			return Timing{}, &InputError{Field: "every", Detail: fmt.Sprintf("must be at least %s on this server (CHATD_MIN_SCHEDULE_INTERVAL)", minEvery)}
		}
	case store.ScheduleAt:
		if t.at, err = time.Parse(time.RFC3339, spec); err != nil {
			return Timing{}, &InputError{Field: "at", Detail: "not an RFC 3339 instant"}
		}
	default:
		return Timing{}, &InputError{Field: "cron", Detail: "give exactly one of cron, every and at"}
	}
	return t, nil
}

// First is the first due time of a schedule created (or retimed) at now.
func (t Timing) First(now time.Time) (time.Time, bool) {
	if t.kind == store.ScheduleAt {
		return t.at.UTC(), true // a past instant runs at once
	}
	return t.Next(now.Truncate(time.Second))
}

// Next is the due time strictly after after; false when there is none.
func (t Timing) Next(after time.Time) (time.Time, bool) {
	switch t.kind {
	case store.ScheduleCron:
		n := t.cron.Next(after.In(t.loc))
		return n.UTC(), !n.IsZero()
	case store.ScheduleEvery:
		return after.Add(t.every).UTC(), true
	}
	return time.Time{}, false
}

// Plan is what a runner does with a schedule whose next_run_at is due.
type Plan struct {
	Due     time.Time   // the due time to run: the latest at or before now
	Skipped []time.Time // earlier missed due times to record (at most maxRecordedSkips, the latest)
	Missed  int         // how many earlier due times were missed in all
	Next    *time.Time  // the due time after Due
}

// PlanAt plans the run of a schedule whose next_run_at (expect) is at or
// before now: only the latest missed due time runs.
func (t Timing) PlanAt(expect, now time.Time) Plan {
	p := Plan{Due: expect}
	if t.kind == store.ScheduleEvery && t.every > 0 {
		// Jump straight to the latest due time: no walk over a long outage.
		k := int(now.Sub(expect) / t.every)
		for i := max(0, k-maxRecordedSkips); i < k; i++ {
			p.Skipped = append(p.Skipped, expect.Add(time.Duration(i)*t.every))
		}
		p.Missed, p.Due = k, expect.Add(time.Duration(k)*t.every)
	} else {
		for {
			n, ok := t.Next(p.Due)
			if !ok || n.After(now) {
				break
			}
			p.Skipped = append(p.Skipped, p.Due)
			if len(p.Skipped) > maxRecordedSkips {
				p.Skipped = p.Skipped[1:]
			}
			p.Missed++
			p.Due = n
		}
	}
	if n, ok := t.Next(p.Due); ok {
		p.Next = &n
	}
	return p
}

// requestNamespace names the durable request ids of scheduled runs.
var requestNamespace = uuid.MustParse("5c1f0a52-9a57-4c4b-8f0e-0c5e2d7f3a11")

// RequestID is the durable request id of a schedule's run at due: the
// same on every replica and after every restart, so a due time is claimed
// once.
func RequestID(scheduleID uuid.UUID, due time.Time) uuid.UUID {
	return uuid.NewSHA1(requestNamespace, []byte(scheduleID.String()+"@"+due.UTC().Format(time.RFC3339Nano)))
}
