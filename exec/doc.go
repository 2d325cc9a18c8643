// Package exec is the runtime: it runs physical topologies on Kafka, in
// the shape of Kafka Streams (StreamThread → TaskManager → StreamTask →
// ProcessorNode), written in Go.
//
//	Query (a persistent query: one application ID = one consumer group)
//	 └─ stream threads (num.stream.threads), thread.go: one group member
//	    and one kgo.GroupTransactSession each (EOSv2: one transactional
//	    producer per thread, offsets committed in the transaction with
//	    live group metadata, read_committed). Loop:
//	    poll → handle rebalance → restore → process → punctuate → maybe commit
//	    Members join as static members (<instance>-<thread>) and are
//	    balanced by taskBalancer (balancer.go): all partitions of a task
//	    to one member, sticky, state-aware, cooperative.
//	     ├─ taskManager (taskmanager.go): creates tasks for assigned
//	     │  partitions, locks their state directories (lock.go), opens
//	     │  their stores (store.go) and closes them on revocation
//	     ├─ changelogReader (changelog.go): restores stores a step at a
//	     │  time between polls, to the changelog's last stable offset
//	     └─ tasks (task.go), one per (sub-topology, partition): a partition
//	        group (records in timestamp order across the task's inputs),
//	        stream time, punctuations (punctuation.go), stores, and the
//	        graph of processors built for it (build.go):
//	          source ─▶ processors ─▶ sink / repartition / store
//
// What flows between processors is a Change (change.go): old row, new
// row, timestamp and the input record. A stream record is a new row; a
// table update carries the old row too; a deletion is an old row alone.
// Processors implement one method, Process; the optional hooks (Init,
// Flush at commit, Abort, Close) are found once when a task is built.
//
// One file per processor: source.go, filter.go, project.go, rekey.go,
// flatmap.go, tablechanges.go, aggregate.go (with window.go and
// session.go for windowed aggregations), materialize.go, join.go,
// repartition.go, sink.go, collect.go (push and pull queries' results).
// Push queries (push.go) and pull queries (pull.go) build the same graphs
// without a group or transaction.
//
// Expressions are compiled into evaluators when a task is built;
// processing a record reuses the task's row buffers and allocates
// nothing in steady state (TestSteadyStateAllocations).
//
// A record that cannot be decoded or evaluated is a bad record: skipped,
// counted and logged with its topic, partition and offset. It never stops
// the query. A panic or a store failure in a task fails its stream
// thread: the query shows FAILED with the error and the thread restarts
// with backoff (1 s doubling to 60 s).
//
// exec imports neither sql nor planner: it sees only physical topologies.
package exec
