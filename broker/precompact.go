package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// kfake compacts a partition by deleting its segment files and writing the
// kept batches to new ones (rebuildSegments): a process killed in between
// loses the partition's log. So before each cleaner round the broker
// hard-links every segment and index file of the partitions it cleans into
// the partition's precompact/ directory (no data is copied; the links keep
// the old files' data alive when kfake deletes their names), and removes
// the links when the round is over. A start that finds a precompact/
// directory knows a round was interrupted: if the partition's log ends
// where the saved one ends or later, the rewrite finished (kfake keeps a
// partition's last batch through compaction) and the links go; otherwise
// the saved files are put back in place of the partial rewrite.

const precompactDir = "precompact"

// partitionDir is kfake's directory of a partition under dataDir.
func partitionDir(dataDir, topic string, partition int32) string {
	return filepath.Join(dataDir, kfakePartitionsDir, url.PathEscape(topic)+"-"+strconv.Itoa(int(partition)))
}

// segmentFiles lists the .dat and .idx files directly in dir.
func segmentFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".dat") || strings.HasSuffix(n, ".idx")) {
			out = append(out, n)
		}
	}
	return out, nil
}

// savePartition links the partition's segment files into precompact/.
func savePartition(pdir string) error {
	files, err := segmentFiles(pdir)
	if errors.Is(err, os.ErrNotExist) || len(files) == 0 {
		return nil // nothing written yet: nothing to lose
	}
	if err != nil {
		return err
	}
	save := filepath.Join(pdir, precompactDir)
	if err := os.RemoveAll(save); err != nil {
		return err
	}
	if err := os.Mkdir(save, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Link(filepath.Join(pdir, f), filepath.Join(save, f)); err != nil {
			return err
		}
	}
	return syncDir(save)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// recoverPartition settles an interrupted compaction of the partition in
// pdir, if there was one (see above). It runs before the log scan.
func recoverPartition(pdir string, log *slog.Logger) error {
	save := filepath.Join(pdir, precompactDir)
	if _, err := os.Stat(save); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	savedEnd, err := logEnd(save)
	if err != nil {
		return err
	}
	end, err := logEnd(pdir)
	if err != nil {
		return err
	}
	if end >= savedEnd {
		return os.RemoveAll(save)
	}
	current, err := segmentFiles(pdir)
	if err != nil {
		return err
	}
	for _, f := range current {
		if err := os.Remove(filepath.Join(pdir, f)); err != nil {
			return err
		}
	}
	saved, err := segmentFiles(save)
	if err != nil {
		return err
	}
	for _, f := range saved {
		if err := os.Rename(filepath.Join(save, f), filepath.Join(pdir, f)); err != nil {
			return err
		}
	}
	if err := syncDir(pdir); err != nil {
		return err
	}
	log.Warn("broker: restored a partition's log as it was before a compaction a crash interrupted",
		"dir", pdir, "log_end", savedEnd, "partial_rewrite_end", end)
	return os.RemoveAll(save)
}

// logEnd returns the offset after the last valid batch of the segments in
// dir, or -1 if there is none.
func logEnd(dir string) (int64, error) {
	files, err := segmentFiles(dir)
	if err != nil {
		return 0, err
	}
	var bases []int64
	for _, f := range files {
		if b, err := strconv.ParseInt(strings.TrimSuffix(f, ".dat"), 10, 64); err == nil && strings.HasSuffix(f, ".dat") {
			bases = append(bases, b)
		}
	}
	slices.Sort(bases)
	for i := len(bases) - 1; i >= 0; i-- {
		end, err := segmentEnd(filepath.Join(dir, strconv.FormatInt(bases[i], 10)+".dat"))
		if err != nil {
			return 0, err
		}
		if end >= 0 {
			return end, nil
		}
	}
	return -1, nil
}

// segmentEnd returns the offset after the last valid batch of one segment
// file, or -1 if it holds none.
func segmentEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	end := int64(-1)
	var head [batchHeaderSize]byte
	for {
		if _, err := io.ReadFull(f, head[:]); err != nil {
			return end, nil // end of file, or a torn tail
		}
		length := int64(int32(binary.BigEndian.Uint32(head[8:12])))
		if length < batchHeaderSize-12 {
			return end, nil
		}
		first := int64(binary.BigEndian.Uint64(head[0:8]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(head[23:27])))
		if _, err := f.Seek(12+length-batchHeaderSize, io.SeekCurrent); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		// A batch cut short by a crash is not counted: check that its
		// end is within the file.
		pos, _ := f.Seek(0, io.SeekCurrent)
		if st, err := f.Stat(); err != nil || pos > st.Size() {
			return end, nil
		}
		end = first + lastDelta + 1
	}
}
