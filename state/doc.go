// Package state owns the byte-oriented state stores under the executor's
// stateful operators (aggregations, joins, windows), and the files that
// record how far each store is restored.
//
//	operator ──▶ Overlay (uncommitted writes of the open transaction)
//	                │ Commit: one atomic ApplyBatch after the Kafka commit
//	                ▼
//	             Store: Memory (skip list) or Rocks (RocksDB via grocksdb)
//	                │ Flush, then WriteCheckpoint(changelog offsets)
//	                ▼
//	             checkpoint file ──▶ restore starts here after a restart
//
// What it provides:
//   - Store and Iterator: a small sorted key/value contract over []byte
//     (concurrency rule, half-open ranges, iterator stability: see Store),
//     and Batch for atomic multi-key writes.
//   - Memory: an in-memory store for tests, small state and operator tests.
//   - Rocks: a RocksDB store; RocksResources shares one block cache and one
//     memtable budget among all the stores of a server.
//   - Overlay: the per-task write overlay that exactly-once needs.
//   - WriteCheckpoint and ReadCheckpoint: the task's changelog offsets,
//     written atomically and checksummed.
//
// What it leaves to exec: encoding rows into keys and values, changelog
// topics and restoration, deciding when to commit, flush and checkpoint.
// Durability comes from the changelog topics: stores never fsync a write,
// and a store that cannot be trusted is rebuilt from its changelog.
//
// Allocation: Memory.Get and Overlay.Get over a Memory store do not
// allocate; Rocks.Get allocates the copy it returns. Overlay writes cost
// amortized zero allocations (an arena dropped at each Commit).
//
// This package imports nothing internal.
package state
