// Package broker runs the embedded Kafka-protocol broker that sqlstreams
// starts when no --bootstrap-servers is given.
//
// It owns three things and nothing else:
//
//   - the kfake cluster: one node, listening on exactly the configured
//     host and port, with its topics, offsets and groups persisted under a
//     data directory so they survive restarts;
//   - the crash repair that runs inside [Start] before any outside client is
//     served (see below);
//   - the repair checkpoint file in the data directory that bounds what the
//     repair reads.
//
// Start, step by step:
//
//	listen on Config.Addr ──▶ kfake.NewCluster (reloads DataDir)
//	      │  outside connections wait in the accept queue
//	      ▼
//	repair: for each partition, read [checkpoint, high watermark)
//	        read_uncommitted with control records ──▶ dangling (producer
//	        ID, epoch) pairs ──▶ kadm.WriteTxnMarkers(abort) ──▶ verify
//	      │
//	      ▼
//	write checkpoint ──▶ accept outside connections ──▶ Start returns
//
// # Why the repair exists
//
// kfake forgets a transaction that was open when its process died (SIGKILL,
// OOM, power): on restart the transaction's records stay hidden from
// read_committed readers, but no producer is known to own them, no timeout
// ever aborts them and no marker ever closes them. A read_committed reader
// then drops every later record of that producer ID on the partition (the
// client's aborted-transaction filter waits for an abort marker that never
// comes), so a restarted query that reuses its transactional id loses all
// its new output. The embedded broker dies with the engine, so every
// SIGKILL of sqlstreams in the middle of a transaction hits this.
//
// The repair closes such transactions the way Kafka's own
// kafka-transactions.sh abort tool does: it finds them in the log and writes
// an abort marker for each with WriteTxnMarkers. A transaction kfake still
// tracks as open (one restored after a clean shutdown, which kfake persists
// and lets its producer finish) is never touched: DescribeProducers lists
// it, and the repair skips it.
//
// # The checkpoint
//
// The file txn-repair-checkpoint.json in the data directory records, per
// partition (and topic ID, so a recreated topic does not inherit it), an
// offset below which every transaction is known to be closed. The repair
// reads each partition only from there to the high watermark. The broker
// rewrites the file after each repair, every 30 seconds while running (from
// the last stable offsets, which by definition satisfy the rule), and on
// Close, so after a crash the repair reads roughly the last 30 seconds of
// writes plus whatever the oldest open transaction spans. A missing,
// unreadable or stale entry (offset beyond the high watermark, as after an
// operating-system crash that lost unsynced log tails) falls back to reading
// the partition from its start, which is always correct, only slower.
// Deleting the file is always safe.
package broker
