package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Sync says when the broker forces what it has written to the disk, and so
// what an acknowledged record survives. Every mode survives the broker's
// process dying (SIGKILL, OOM, panic): writes reach the operating system
// before the producer is answered. The modes differ in what survives the
// machine dying (power loss, kernel panic, a VM killed from outside).
type Sync string

const (
	// SyncNever leaves writing back to the operating system, as Apache
	// Kafka does by default (it relies on replication, which the
	// embedded broker does not have). A power loss loses the records the
	// kernel had not yet written back, by default up to about 30 seconds
	// of acknowledged writes; the start-up scan then cuts torn tails.
	SyncNever Sync = "never"

	// SyncInterval flushes the data directory's file system every
	// Config.SyncInterval (default [DefaultSyncInterval]). A power loss
	// loses at most the records acknowledged in the last interval (plus
	// the time a flush takes). The default.
	SyncInterval Sync = "interval"

	// SyncAlways fsyncs every batch's segment and index before the
	// producer is answered (kfake.SyncWrites): an acknowledged record
	// survives a power loss. It costs one fsync per produced batch, on
	// one goroutine for the whole broker; see README for figures.
	SyncAlways Sync = "always"
)

// DefaultSyncInterval is the flush interval of [SyncInterval].
const DefaultSyncInterval = time.Second

// ParseSync parses a --embedded-kafka-fsync value.
func ParseSync(s string) (Sync, error) {
	switch m := Sync(s); m {
	case SyncNever, SyncInterval, SyncAlways:
		return m, nil
	case "":
		return SyncInterval, nil
	}
	return "", fmt.Errorf("broker: fsync mode %q: want never, interval or always", s)
}

// syncLoop flushes the file system holding dir every interval until ctx is
// done. syncfs(2) flushes the whole file system, so it covers segments,
// indexes, kfake's state logs and the directory entries of new segment
// files alike, whatever kfake has open.
func syncLoop(ctx context.Context, dir string, interval time.Duration, log *slog.Logger) {
	d, err := os.Open(dir)
	if err != nil {
		log.Error("broker: cannot open the data directory to flush it; records are not flushed on an interval", "err", err)
		return
	}
	defer d.Close()
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := syncfs(d)
		switch {
		case err != nil && !failing:
			failing = true
			log.Error("broker: flushing the data directory failed", "data_dir", dir, "err", err)
		case err == nil && failing:
			failing = false
			log.Info("broker: flushing the data directory works again", "data_dir", dir)
		}
	}
}
