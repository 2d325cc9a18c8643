package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// checkpointFile is the repair checkpoint's name inside the data directory.
// kfake keeps its own state in other files and in partitions/, and ignores
// this one.
const checkpointFile = "txn-repair-checkpoint.json"

// checkpointVersion is the file format version; a file with another
// version is ignored (the repair then reads every partition from its
// start).
const checkpointVersion = 1

// checkpoint is the repair checkpoint: per partition, an offset below which
// every transaction is closed (committed or aborted by a marker), so the
// repair need not read below it.
//
// File format (JSON):
//
//	{"version": 1, "topics": {"orders": {"id": "<topic ID, base64>", "partitions": {"0": 1234}}}}
//
// An entry counts only while its topic ID matches the live topic's (a
// deleted and recreated topic starts over) and its offset is within the
// partition's [log start, high watermark].
type checkpoint struct {
	Version int                        `json:"version"`
	Topics  map[string]checkpointTopic `json:"topics"`
}

type checkpointTopic struct {
	ID         string          `json:"id"`
	Partitions map[int32]int64 `json:"partitions"`
}

// clean returns the checkpointed clean offset of topic/partition with the
// given topic ID, or false if there is none.
func (c *checkpoint) clean(topic, id string, partition int32) (int64, bool) {
	if c == nil {
		return 0, false
	}
	t, ok := c.Topics[topic]
	if !ok || t.ID != id {
		return 0, false
	}
	off, ok := t.Partitions[partition]
	return off, ok
}

// set records the clean offset of topic/partition.
func (c *checkpoint) set(topic, id string, partition int32, off int64) {
	if c.Topics == nil {
		c.Topics = make(map[string]checkpointTopic)
	}
	t, ok := c.Topics[topic]
	if !ok || t.ID != id {
		t = checkpointTopic{ID: id, Partitions: make(map[int32]int64)}
		c.Topics[topic] = t
	}
	t.Partitions[partition] = off
}

// readCheckpoint reads the checkpoint in dir. A missing file is an empty
// checkpoint; an unreadable one is an error (callers fall back to reading
// everything).
func readCheckpoint(dir string) (*checkpoint, error) {
	raw, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if os.IsNotExist(err) {
		return &checkpoint{Version: checkpointVersion}, nil
	}
	if err != nil {
		return nil, err
	}
	var c checkpoint
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", checkpointFile, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", checkpointFile, c.Version, checkpointVersion)
	}
	return &c, nil
}

// writeCheckpoint replaces the checkpoint in dir atomically (write, fsync,
// rename), so a crash leaves either the old or the new file.
func writeCheckpoint(dir string, c *checkpoint) error {
	c.Version = checkpointVersion
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, checkpointFile)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// liveCheckpoint builds a checkpoint from the partitions' last stable
// offsets: below the LSO every transaction is decided, which is exactly
// the checkpoint's promise. It is only trustworthy after the repair has run
// (before it, kfake reports LSO = high watermark for the very transactions
// the repair exists to close).
func (b *Broker) liveCheckpoint(ctx context.Context) (*checkpoint, error) {
	topics, err := b.admin.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, err
	}
	if err := topics.Error(); err != nil {
		return nil, err
	}
	c := &checkpoint{Version: checkpointVersion, Topics: make(map[string]checkpointTopic)}
	if len(topics) == 0 {
		return c, nil
	}
	lsos, err := b.admin.ListCommittedOffsets(ctx, topics.Names()...)
	if err != nil {
		return nil, err
	}
	for _, td := range topics {
		for p := range td.Partitions {
			lo, ok := lsos.Lookup(td.Topic, p)
			if !ok || lo.Err != nil || lo.Offset < 0 {
				continue // not checkpointed: the repair reads it all
			}
			c.set(td.Topic, td.ID.String(), p, lo.Offset)
		}
	}
	return c, nil
}

// writeLiveCheckpoint writes the live checkpoint to the data directory.
func (b *Broker) writeLiveCheckpoint(ctx context.Context) error {
	c, err := b.liveCheckpoint(ctx)
	if err != nil {
		return err
	}
	return writeCheckpoint(b.dataDir, c)
}

// checkpointLoop rewrites the checkpoint every checkpointInterval until ctx
// is done, so that after a crash the repair reads about one interval of
// writes per partition.
func (b *Broker) checkpointLoop(ctx context.Context) {
	defer close(b.loopDone)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := b.writeLiveCheckpoint(wctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			b.log.Warn("broker: repair checkpoint not written", "err", err)
		}
	}
}
