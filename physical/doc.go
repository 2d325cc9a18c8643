// Package physical owns the topology: a persistent or push query as plain
// data that the executor runs. A topology is a DAG of nodes ({ID, name,
// kind, inputs}, the kind being the type of the node's Op), the named
// state stores they use (key-value, window, session, time-ordered
// buffer; changelog; layout; retention), and the sub-topologies derived
// from the graph: its connected parts, since a repartition topic joins
// its writer and its reader by name, not by an edge.
//
//	planner.Sink / planner.Query ─▶ Build ─▶ Graph ─▶ Topology ─▶ exec
//	                                                     └─▶ String (EXPLAIN), Fingerprint
//
// A node kind is one type in nodes.go implementing Op (its EXPLAIN line,
// its schema, and the optional parts: the columns it reads, the stores it
// keeps, the internal topic it writes, its part of the shape), plus one
// case in exec's builder.
//
// Topologies are printable and comparable without running anything; the
// printout and internal names are pinned by golden tests, because renaming
// an internal topic or store breaks a running query.
package physical
