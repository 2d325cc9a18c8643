// Package broker runs the embedded Kafka-protocol broker that sqlstreams
// starts when no --bootstrap-servers is given.
//
// It owns these things and nothing else:
//
//   - the kfake cluster: one node, listening on exactly the configured
//     host and port, with its topics, offsets and groups persisted under a
//     data directory so they survive restarts;
//   - the start-up log scan (logscan.go): torn tails cut, idempotent
//     producer state rebuilt from the log after a crash (see below);
//   - the crash repair of transactions that runs inside [Start] before any
//     outside client is served (see below);
//   - the repair checkpoint file in the data directory that bounds what the
//     repair reads;
//   - the log cleaner (cleaner.go): compaction and retention every 15 s,
//     run only when no transaction is open on a partition it cleans, with
//     the old segment files kept until a round is over, since kfake deletes
//     them before it writes the compacted ones (precompact.go);
//   - storage faults (storage.go) and durability modes ([Sync]);
//   - security (security.go): TLS on outside connections, SCRAM users, the
//     internal superuser its own clients and [Broker.Profile]'s log in as
//     (a random password per start; kfake's persisted SASL users are
//     deleted at start and stop), and SaslHandshake advertised from v0 so
//     that librdkafka 2.0 clients can log in.
//
// Start, step by step:
//
//	scan the log: settle an interrupted compaction; cut torn tails;
//	complete journaled commits; after a crash, rebuild producer state
//	      │
//	      ▼
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
//
// # Idempotent producers across a crash
//
// Kafka promises an idempotent producer that a retried batch is stored
// once: the broker keeps, per producer ID and partition, the epoch and the
// last five batches' sequence numbers, answers a retry of one of them as a
// duplicate (with the original offset) and a batch after a gap as
// OUT_OF_ORDER_SEQUENCE_NUMBER. kfake does all that while it runs, but
// writes that state (seq_windows.json) only on a clean shutdown. After a
// SIGKILL it knew no sequences, accepted whatever batch came first, and a
// producer's retries of acknowledged batches were stored again
// (TestIdempotentProducersAcrossCrashes, 80,000 records over six crashes:
// without the fix 10 to 67 duplicates and records out of order in some
// runs, none with it; TestRetriedBatchAfterCrash shows it every time).
//
// The state is rebuilt the way Kafka rebuilds it: from the log. Every
// stored data batch carries its producer ID, epoch, first sequence and
// record count, so the log itself is the durable record of producer state,
// and can never disagree with the data (a separate snapshot could: written
// before the batch, it would name a batch a crash lost; after it, miss one
// the crash kept). Before kfake loads the data directory, the scan reads
// every segment batch by batch (headers and CRCs, which kfake's own load
// reads in full anyway) and, when the last run did not end with a clean
// Close (no clean-shutdown marker), writes each producer's last five
// batches per partition into kfake's seq_windows.json, and an "init" entry
// into pids.log for an idempotent producer kfake has no record of. kfake
// then loads them and enforces them with its own code. After a clean Close
// kfake's saved state is exact (it also covers producers whose batches
// compaction has since removed) and is kept.
//
// Alternatives considered: intercepting Produce through ControlKey with a
// snapshot of our own cannot work, because a control function runs before
// kfake handles the request and never sees whether or where the batch was
// stored; no newer kfake in the module proxy persists the state live; a
// fork was ruled out. The cost is dependence on two of kfake's file
// formats (segments, which are Kafka's RecordBatch bytes, and
// seq_windows.json): TestProducerStateFromLogMatchesKfakes compares the
// rebuilt state with kfake's own after a clean shutdown, so an upgrade that
// changes either fails a test.
//
// # Torn writes
//
// A power loss can leave a segment ending inside a batch, or with a batch
// whose bytes never all reached the disk. The scan cuts each segment back
// to the end of its last batch that is complete, passes its CRC and
// parses, cuts the segment's index to match, and logs the file, the reason
// and the bytes cut; valid batches are never skipped (everything after the
// first bad batch of a segment is cut, as Kafka's own recovery does). It
// does the same for kfake's framed state logs (pids.log, groups.log),
// whose torn tails kfake skips when reading but leaves in place, so that
// its next appends would be unreadable at the start after.
//
// # Storage faults and durability
//
// See storage.go: while the data directory's disk is full or a write has
// failed, produces are refused with KAFKA_STORAGE_ERROR before kfake
// records their sequences, and accepted again once a probe write works.
// A write that fails between the free-space check and kfake's write (the
// disk filled by another process in that instant, or an I/O error) is
// still answered by kfake itself, with UNKNOWN_SERVER_ERROR, after it
// recorded the batch's sequence: a retry of exactly that batch would then
// be taken for a duplicate. [Sync] says when writes are forced to disk and
// what each mode survives.
package broker
