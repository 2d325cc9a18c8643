package state

// The parts of the RocksDB store that do not need RocksDB itself: its
// options and the interfaces it implements, which the packages above
// name whether or not the build has cgo (rocks_nocgo.go).

// RocksOptions configures OpenRocks. The zero value is valid.
type RocksOptions struct {
	// Resources is the server-wide block cache and write-buffer budget the
	// store draws on. Nil gives the store private resources (an 8 MiB
	// cache and a 16 MiB budget) released by Close: fine for tools and
	// tests, wrong for a server with many stores.
	Resources *RocksResources

	// DisableWAL turns RocksDB's write-ahead log off. Writes then live
	// only in memtables until RocksDB flushes them, so a process crash
	// loses them and the store must be restored from its changelog from
	// the last checkpoint that a Flush covered. With the WAL on (the
	// default) writes are appended to the log but never fsynced per write
	// either: they survive a process crash, not an OS crash, until Flush.
	// Either way the changelog topic, not RocksDB, is what makes state
	// durable.
	DisableWAL bool
}

// Defaults used by NewRocksResources for non-positive arguments.
const (
	DefaultBlockCacheBytes  = 64 << 20
	DefaultWriteBufferBytes = 64 << 20
	DefaultValueCacheBytes  = 64 << 20
)

// Ingester is implemented by stores that can take a large batch as a
// sorted file rather than write by write (Rocks): what a restore from a
// changelog wants, where inserting a million random keys into a memtable
// one by one costs several times more than sorting them once.
type Ingester interface {
	// IngestBatch applies b like BulkWriter.ApplyBatchUnlogged: a later
	// operation on a key overrides an earlier one, the batch is visible
	// at once, whole, and FlushMemtables makes it durable.
	IngestBatch(b *Batch) error
}
