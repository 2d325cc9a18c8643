package state

import (
	"errors"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	offsets := map[string]int64{
		"app_query_CTAS_1-agg-changelog-0": 0,
		"app_query_CTAS_1-agg-changelog-7": 1 << 40,
		"":                                 3,
		"with space and \"quotes\"\n":      4,
		"not utf-8 \xff\x00":               5,
	}
	if err := WriteCheckpoint(path, offsets); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, offsets) {
		t.Fatalf("read %v; wrote %v", got, offsets)
	}

	// Overwrite: the new content replaces the old, and no temp file stays.
	if err := WriteCheckpoint(path, map[string]int64{"t-0": 9}); err != nil {
		t.Fatal(err)
	}
	got, err = ReadCheckpoint(path)
	if err != nil || !maps.Equal(got, map[string]int64{"t-0": 9}) {
		t.Fatalf("after overwrite: %v, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after two writes; want only the checkpoint", len(entries))
	}
}

func TestCheckpointEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	got, err := ReadCheckpoint(filepath.Join(dir, "missing"))
	if got != nil || err != nil {
		t.Fatalf("missing file: %v, %v; want nil, nil", got, err)
	}
	path := filepath.Join(dir, "empty")
	if err := WriteCheckpoint(path, nil); err != nil {
		t.Fatal(err)
	}
	got, err = ReadCheckpoint(path)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty checkpoint: %v (nil=%v), %v; want an empty non-nil map", got, got == nil, err)
	}
}

func TestCheckpointRejectsNegativeOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	if err := WriteCheckpoint(path, map[string]int64{"t-0": -1}); err == nil {
		t.Fatal("negative offset accepted")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was written: %v", err)
	}
}

// TestCheckpointUntrusted damages a valid file in every way a crash or a
// stray writer could and expects ErrCheckpointInvalid each time.
func TestCheckpointUntrusted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	if err := WriteCheckpoint(path, map[string]int64{"a-0": 12, "a-1": 345}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	expectInvalid := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCheckpoint(p)
		if !errors.Is(err, ErrCheckpointInvalid) {
			t.Fatalf("%s: ReadCheckpoint = %v, %v; want ErrCheckpointInvalid", name, got, err)
		}
	}
	for n := 0; n < len(good); n++ {
		expectInvalid("torn", good[:n])
	}
	for i := range good {
		for _, bit := range []byte{0x01, 0x10, 0x80} {
			bad := append([]byte(nil), good...)
			bad[i] ^= bit
			expectInvalid("bit flip", bad)
		}
	}
	expectInvalid("doubled", append(append([]byte(nil), good...), good...))
	expectInvalid("foreign", []byte(`{"a-0": 12}`+"\n"))
	expectInvalid("foreign with a trailer", []byte("hello\ncrc32c 00000000\n"))

	// A later version, properly checksummed, is reported as unsupported.
	body := "sqlstreams-checkpoint 2\n\"a-0\" 12\n"
	v2 := body + "crc32c " + hex8(crc32.Checksum([]byte(body), castagnoli)) + "\n"
	p := filepath.Join(dir, "v2")
	os.WriteFile(p, []byte(v2), 0o644)
	if _, err := ReadCheckpoint(p); !errors.Is(err, ErrCheckpointInvalid) || !strings.Contains(err.Error(), "unsupported version") {
		t.Fatalf("version 2 file: %v", err)
	}

	// I/O errors are not ErrCheckpointInvalid.
	if _, err := ReadCheckpoint(dir); err == nil || errors.Is(err, ErrCheckpointInvalid) {
		t.Fatalf("reading a directory: %v; want a plain I/O error", err)
	}
}

func hex8(v uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}
