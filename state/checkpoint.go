package state

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrCheckpointInvalid is wrapped by ReadCheckpoint's error when the file
// exists but cannot be trusted: torn, truncated, corrupted, of another
// version, or not a checkpoint at all. The caller restores the task's
// stores from the beginning of their changelogs, as with no checkpoint.
var ErrCheckpointInvalid = errors.New("state: checkpoint file is not valid")

// checkpointHeader is the first line of a checkpoint file; the number is
// the format version.
const checkpointHeader = "sqlstreams-checkpoint 1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteCheckpoint records, for each changelog topic-partition of a task
// (the map key, in whatever spelling the caller uses), the next changelog
// offset to restore from. The file is replaced atomically: it is written
// to a temporary file in the same directory, fsynced, renamed over path,
// and the directory is fsynced, so a crash leaves the old file or the new
// one. Offsets must not be negative.
//
// Format (text, one entry per line, sorted by key):
//
//	sqlstreams-checkpoint 1
//	"app-store-changelog-3" 1042
//	crc32c 5f0e2c1a
//
// Keys are Go-quoted; the last line is the CRC-32C (Castagnoli) of every
// byte before it.
func WriteCheckpoint(path string, offsets map[string]int64) error {
	keys := make([]string, 0, len(offsets))
	for k, off := range offsets {
		if off < 0 {
			return fmt.Errorf("state: write checkpoint %s: negative offset %d for %q", path, off, k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := make([]byte, 0, 64+32*len(keys))
	buf = append(buf, checkpointHeader...)
	buf = append(buf, '\n')
	for _, k := range keys {
		buf = strconv.AppendQuote(buf, k)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, offsets[k], 10)
		buf = append(buf, '\n')
	}
	buf = fmt.Appendf(buf, "crc32c %08x\n", crc32.Checksum(buf, castagnoli))
	if err := writeFileAtomic(path, buf); err != nil {
		return fmt.Errorf("state: write checkpoint: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with data: temp file, fsync, rename, fsync
// of the directory.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err = d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// ReadCheckpoint reads a file written by WriteCheckpoint. A missing file is
// not an error: it returns (nil, nil), so that "no checkpoint" and an
// empty one (a non-nil empty map) stay distinguishable. A file that exists
// but fails validation returns an error wrapping ErrCheckpointInvalid;
// other errors (permissions, I/O) are returned as they are.
func ReadCheckpoint(path string) (map[string]int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: read checkpoint: %w", err)
	}
	offsets, reason := parseCheckpoint(data)
	if reason != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrCheckpointInvalid, path, reason)
	}
	return offsets, nil
}

// parseCheckpoint returns the offsets, or a reason the data is invalid.
func parseCheckpoint(data []byte) (map[string]int64, string) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "truncated (no final newline)"
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, "no checksum line"
	}
	body, trailer := data[:i+1], string(data[i+1:len(data)-1])
	hex, ok := strings.CutPrefix(trailer, "crc32c ")
	if !ok || len(hex) != 8 {
		return nil, "malformed checksum line"
	}
	sum, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		return nil, "malformed checksum line"
	}
	if got := crc32.Checksum(body, castagnoli); got != uint32(sum) {
		return nil, fmt.Sprintf("checksum mismatch (file says %08x, content has %08x)", sum, got)
	}
	lines := bytes.Split(body[:len(body)-1], []byte{'\n'})
	if h := string(lines[0]); h != checkpointHeader {
		if v, ok := bytes.CutPrefix(lines[0], []byte("sqlstreams-checkpoint ")); ok {
			return nil, fmt.Sprintf("unsupported version %q", v)
		}
		return nil, "not a sqlstreams checkpoint"
	}
	offsets := make(map[string]int64, len(lines)-1)
	for n, line := range lines[1:] {
		sp := bytes.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Sprintf("line %d: malformed entry", n+2)
		}
		key, err := strconv.Unquote(string(line[:sp]))
		if err != nil {
			return nil, fmt.Sprintf("line %d: malformed key", n+2)
		}
		off, err := strconv.ParseInt(string(line[sp+1:]), 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Sprintf("line %d: malformed offset", n+2)
		}
		if _, dup := offsets[key]; dup {
			return nil, fmt.Sprintf("line %d: duplicate key %q", n+2, key)
		}
		offsets[key] = off
	}
	return offsets, ""
}
