package planner

import (
	"fmt"
	"strings"
	"time"
	// Window time zones come from Go's own tz database, so that a machine
	// without /usr/share/zoneinfo aligns windows the same way.
	_ "time/tzdata"

	"github.com/sqlstreams/sqlstreams/types"
)

// WindowSpec is a WINDOW clause: how an aggregation's rows fall into
// windows, how long a window accepts late rows, and how long its state is
// kept. Durations are milliseconds.
type WindowSpec struct {
	Type types.WindowType
	// SizeMs is a time window's size, or a session's inactivity gap.
	SizeMs int64
	// AdvanceMs is a hopping window's advance (SizeMs for tumbling
	// windows, 0 for sessions).
	AdvanceMs int64
	// GraceMs is how long after a window's end (for a session: after its
	// end plus the gap) rows are still accepted, by stream time.
	GraceMs int64
	// RetentionMs is how long a window's state is kept after its start
	// (for a session: after its end), by stream time.
	RetentionMs int64
	// Zone, when set, aligns time windows to local time in that IANA time
	// zone (a day is local midnight to local midnight, 23 or 25 hours
	// long on daylight-saving days) rather than to the epoch in UTC.
	Zone string
}

// DefaultGrace is ksqlDB's (and Kafka Streams' legacy) grace period when
// none is given: 24 hours less the window size, never negative.
func DefaultGrace(sizeMs int64) int64 { return max(24*time.Hour.Milliseconds()-sizeMs, 0) }

// NewWindowSpec checks a WINDOW clause and fills in ksqlDB's defaults.
// advance, retention and grace are -1 when the clause leaves them out.
func NewWindowSpec(t types.WindowType, size, advance, retention, grace int64, zone string) (*WindowSpec, error) {
	w := &WindowSpec{Type: t, SizeMs: size, Zone: zone}
	what := "window SIZE"
	if t == types.Session {
		what = "session gap"
	}
	if size <= 0 {
		return nil, fmt.Errorf("%s must be positive", what)
	}
	switch t {
	case types.Tumbling:
		w.AdvanceMs = size
	case types.Hopping:
		if advance <= 0 {
			return nil, fmt.Errorf("HOPPING windows need ADVANCE BY a positive duration")
		}
		if advance > size {
			return nil, fmt.Errorf("ADVANCE BY (%s) must not be larger than the window SIZE (%s)", FormatDuration(advance), FormatDuration(size))
		}
		w.AdvanceMs = advance
	case types.Session:
		if zone != "" {
			return nil, fmt.Errorf("TIME ZONE applies to TUMBLING and HOPPING windows; session windows follow their records")
		}
	default:
		return nil, fmt.Errorf("unknown window type %q", t)
	}
	if zone != "" {
		if _, err := time.LoadLocation(zone); err != nil || strings.EqualFold(zone, "local") {
			return nil, fmt.Errorf("unknown TIME ZONE '%s' (use an IANA name such as 'Europe/Berlin')", zone)
		}
	}
	w.GraceMs = grace
	if grace < 0 {
		w.GraceMs = DefaultGrace(size)
	}
	w.RetentionMs = retention
	if retention < 0 {
		w.RetentionMs = size + w.GraceMs
	} else if retention < size+w.GraceMs {
		return nil, fmt.Errorf("RETENTION (%s) must be at least the window SIZE plus its GRACE PERIOD (%s)",
			FormatDuration(retention), FormatDuration(size+w.GraceMs))
	}
	return w, nil
}

// String renders the clause as a WINDOW clause with every value spelled
// out, for EXPLAIN.
func (w *WindowSpec) String() string {
	var b strings.Builder
	b.WriteString(string(w.Type))
	b.WriteString(" (")
	switch w.Type {
	case types.Session:
		b.WriteString(FormatDuration(w.SizeMs))
	case types.Hopping:
		b.WriteString("SIZE " + FormatDuration(w.SizeMs) + ", ADVANCE BY " + FormatDuration(w.AdvanceMs))
	default:
		b.WriteString("SIZE " + FormatDuration(w.SizeMs))
	}
	b.WriteString(", RETENTION " + FormatDuration(w.RetentionMs) + ", GRACE PERIOD " + FormatDuration(w.GraceMs))
	if w.Zone != "" {
		b.WriteString(", TIME ZONE '" + w.Zone + "'")
	}
	b.WriteString(")")
	return b.String()
}

// FormatDuration writes milliseconds in the largest unit that divides
// them, as ksqlDB's units spell it (1 HOUR, 90 SECONDS, 1500 MILLISECONDS).
func FormatDuration(ms int64) string {
	units := []struct {
		ms   int64
		name string
	}{{86_400_000, "DAY"}, {3_600_000, "HOUR"}, {60_000, "MINUTE"}, {1000, "SECOND"}, {1, "MILLISECOND"}}
	if ms == 0 {
		return "0 SECONDS"
	}
	for _, u := range units {
		if ms != 0 && ms%u.ms == 0 || u.ms == 1 {
			n := ms / u.ms
			if n == 1 {
				return fmt.Sprintf("%d %s", n, u.name)
			}
			return fmt.Sprintf("%d %sS", n, u.name)
		}
	}
	return ""
}
