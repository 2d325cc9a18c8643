// Package planner owns the logical plan: typed, immutable node trees built
// by the sql binder, with type checking, key inference and the decision of
// where data must be repartitioned.
//
//	sql.Bind ─▶ Scan ─▶ Filter ─▶ Project ─▶ Sink      (a persistent query)
//	                                   └──▶ Query{Limit, Emit} (a push query)
//
//	Scan (stream) ─┐
//	               Join ─▶ Filter ─▶ Project ─▶ Sink  (a stream–table join)
//	Scan (table)  ─┘
//
// The planner sees the catalog only as data (catalog.Source); it never
// talks to Kafka. physical.Build turns a plan into a topology.
package planner
