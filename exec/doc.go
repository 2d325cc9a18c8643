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
//	    The thread decides when a transaction ends (the commit interval,
//	    a rebalance, records without a running task, leaving); its task
//	    manager ends it. Members join as static members
//	    (<instance>-<thread>) and are balanced by taskBalancer
//	    (balancer.go): all partitions of a task to one member, sticky,
//	    state-aware, cooperative.
//	     ├─ taskManager (taskmanager.go): creates tasks for assigned
//	     │  partitions, locks their state directories (lock.go), opens
//	     │  their stores (store.go), closes them on revocation, and
//	     │  commits them as Kafka Streams' TaskManager.commit does:
//	     │  begin, then commit (each task's flush, the producer's flush,
//	     │  End with the offsets, the stores' commit) or abort
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
// build.go wires a task's processors by node name, each after the nodes
// that read it, whatever the order of the sub-topology's nodes or of a
// node's inputs. A node that tells its inputs apart (a join) finds each
// side by what the input is — the store it keeps, the declared source
// its rows come from — and takes each input's changes by its name; a
// side no input fills is an error naming the node.
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
