// Package plan is the recorded form of a persistent query: the physical
// topology it runs (physical.Topology, already plain data), the sink it
// registers in the catalog and the query-level behaviour its processors
// run with, encoded as versioned, self-describing JSON.
//
//	sql ─▶ planner ─▶ physical.Topology ─▶ plan.Encode ─▶ catalog.Command.Plan ─▶ command topic
//	                                                                                  │
//	exec ◀── physical.Topology ◀── plan.Decode ◀──────────── replay, restart, upgrade ┘
//
// A command that carries a plan is never bound again: a later change to
// binding or planning cannot change a query that runs. The plan-format
// Version says which encoding a plan has; every build reads all the
// versions before its own, and testdata/historical_plans keeps a plan of
// each test case per version to prove it.
//
// plan may import types, expr, planner, physical and catalog; exec never
// imports it (it runs the decoded topology).
package plan
