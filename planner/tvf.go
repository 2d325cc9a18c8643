package planner

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/types"
)

var _ Node = (*WindowTVF)(nil)

// WindowTVF is a window table function (TUMBLE, HOP or SESSION over a
// stream, in Flink's and RisingWave's form) as the binder finds it: the
// stream's rows, each in the window(s) of its TimeColumn. The Aggregate
// over it groups by the window (its Window); the function itself says
// which column is the event time. Lowering (WindowTVFToEventTime) makes
// that column the scan's event time, as a source's TIMESTAMP property
// does, and the node goes away.
type WindowTVF struct {
	Input Node // a *Scan
	// Fn is TUMBLE, HOP or SESSION; Args its durations as written.
	Fn, Args string
	// TimeColumn is the DESCRIPTOR column, "" for the record's time
	// (DESCRIPTOR(ROWTIME)).
	TimeColumn string
}

func (w *WindowTVF) Schema() types.Schema { return w.Input.Schema() }
func (w *WindowTVF) Children() []Node     { return []Node{w.Input} }
func (w *WindowTVF) String() string {
	col := w.TimeColumn
	if col == "" {
		col = "ROWTIME"
	}
	return fmt.Sprintf("WindowTVF %s(TABLE %s, DESCRIPTOR(%s), %s)", w.Fn, Sources(w.Input)[0].Name, col, w.Args)
}

// windowTVFToEventTime lowers a window table function: its scan reads
// the DESCRIPTOR column as the event time (the record's timestamp, which
// the window operators window by), and the function's node goes.
func windowTVFToEventTime(n Node) (Node, bool) {
	w, ok := n.(*WindowTVF)
	if !ok {
		return n, false
	}
	scan, ok := w.Input.(*Scan)
	if !ok {
		return n, false
	}
	src := scan.Source
	if src.TimestampColumn == w.TimeColumn {
		return scan, true
	}
	c := *src
	c.TimestampColumn, c.TimestampFormat = w.TimeColumn, ""
	return NewScan(&c), true
}
