// Package physical owns the topology: a persistent or push query as plain
// data that the executor runs. A topology is a list of sub-topologies, each
// a chain of processor nodes from one source to a sink, plus the internal
// topics (repartition, changelog) and state stores it needs, all with
// deterministic names.
//
//	planner.Sink / planner.Query ─▶ Build ─▶ Topology ─▶ exec
//	                                            └─▶ String (EXPLAIN), Fingerprint
//
// Topologies are printable and comparable without running anything; the
// printout and internal names are pinned by golden tests, because renaming
// an internal topic breaks a running query.
package physical
