package main

import "testing"

// TestEmbeddedKafkaFsyncFlag: a mode that does not exist is refused before
// anything starts, instead of running with a durability the user did not
// ask for.
func TestEmbeddedKafkaFsyncFlag(t *testing.T) {
	if code := runServer([]string{"--embedded-kafka-fsync", "sometimes", "--data-dir", t.TempDir()}); code != 2 {
		t.Fatalf("--embedded-kafka-fsync=sometimes: exit code %d, want 2", code)
	}
}
