package main

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigPrecedence: flag > environment > file > default, with
// ksqlDB's key names and the flags' own, and each value's source.
func TestConfigPrecedence(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	t.Setenv(envName("instance-id"), "from-env")
	serviceID := stringFlag(fs, "service-id", "sqlstreams", "")
	httpAddr := stringFlag(fs, "http-addr", "127.0.0.1:8088", "")
	pgAddr := stringFlag(fs, "pg-addr", "127.0.0.1:5433", "")
	instanceID := stringFlag(fs, "instance-id", "", "")
	threads := intFlag(fs, "num-stream-threads", 1, "")
	dataDir := stringFlag(fs, "data-dir", "./data", "")
	path := writeConfig(t, `# a ksql-server.properties
ksql.service.id = from_file
listeners=http://0.0.0.0:18088,https://0.0.0.0:18443
pg-addr: 127.0.0.1:15433
instance-id=from-file
ksql.streams.num.stream.threads=\
  3
ksql.streams.producer.linger.ms=5
ksql.unknown.thing=1
! another comment
`)
	if err := fs.Parse([]string{"--pg-addr", "127.0.0.1:25433"}); err != nil {
		t.Fatal(err)
	}
	file, sc, err := readConfig(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	warnings, kafkaProps := sc.warnings, sc.kafka
	if len(warnings) != 1 || !strings.Contains(warnings[0], "line 9") || !strings.Contains(warnings[0], "ksql.unknown.thing") {
		t.Errorf("warnings %q: want one naming ksql.unknown.thing on line 9", warnings)
	}
	if len(kafkaProps) != 1 || kafkaProps[0].Key != "ksql.streams.producer.linger.ms" || kafkaProps[0].Value != "5" || kafkaProps[0].Source != path+" line 8" {
		t.Errorf("Kafka client settings %+v: want ksql.streams.producer.linger.ms=5 from line 8", kafkaProps)
	}
	settings, err := applyConfig(fs, path, file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{*serviceID, "from_file"},    // file over default
		{*httpAddr, "0.0.0.0:18088"}, // listeners: the first, without scheme
		{*pgAddr, "127.0.0.1:25433"}, // flag over file
		{*instanceID, "from-env"},    // environment over file
		{*dataDir, "./data"},         // default
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if *threads != 3 {
		t.Errorf("threads %d, want 3 (a continued line)", *threads)
	}
	src := map[string]string{}
	for _, s := range settings {
		src[s.Name] = s.Source
	}
	for name, want := range map[string]string{
		"service-id":         path + " line 2 (ksql.service.id)",
		"pg-addr":            "flag --pg-addr",
		"instance-id":        "environment SQLSTREAMS_INSTANCE_ID",
		"data-dir":           "default",
		"num-stream-threads": path + " line 6 (ksql.streams.num.stream.threads)",
	} {
		if src[name] != want {
			t.Errorf("%s: source %q, want %q", name, src[name], want)
		}
	}
}

// TestConfigErrors: a malformed value names its key and line; a line
// without a key is refused; the server does not start with either.
func TestConfigErrors(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	intFlag(fs, "num-stream-threads", 1, "")
	path := writeConfig(t, "\n\nksql.streams.num.stream.threads=many\n")
	file, _, err := readConfig(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = applyConfig(fs, path, file)
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "ksql.streams.num.stream.threads") {
		t.Fatalf("malformed value: %v, want an error naming the key and line 3", err)
	}
	if _, _, err := readConfig(fs, writeConfig(t, "just words\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a line without =: %v", err)
	}
	// A property of the engine's registry with a bad value.
	bad := writeConfig(t, "# defaults\nksql.streams.auto.offset.reset=soonest\n")
	if _, _, err := readConfig(fs, bad); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "ksql.streams.auto.offset.reset") {
		t.Fatalf("a bad property value: %v, want an error naming the key and line 2", err)
	}
	if code := runServer([]string{"--config", bad, "--data-dir", t.TempDir()}); code != 2 {
		t.Fatalf("server with a bad property value: exit code %d, want 2", code)
	}
	if code := runServer([]string{"--config", path, "--data-dir", t.TempDir()}); code != 2 {
		t.Fatalf("server with a malformed config: exit code %d, want 2", code)
	}
}

// TestConfigSessionProperties: a --config key that is a session, query
// or statement property of the registry (docs/properties.md) becomes the
// server's default of it, under its registry name (ksqlDB's
// ksql-server.properties sets them so); one the registry refuses is
// ignored with a warning that says so, naming the key and its line.
func TestConfigSessionProperties(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	path := writeConfig(t, "ksql.query.pull.table.scan.enabled=false\nksql.new.query.planner.enabled=true\nksql.output.topic.name.prefix=x\nksql.streams.auto.offset.reset=earliest\n")
	_, sc, err := readConfig(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	want := `line 2: setting "ksql.new.query.planner.enabled" ignored: Property 'ksql.new.query.planner.enabled' is not supported: sqlstreams has one planner`
	if len(sc.warnings) != 1 || !strings.Contains(sc.warnings[0], want) {
		t.Errorf("warnings %q, want one: %q", sc.warnings, want)
	}
	if wantDefaults := map[string]string{
		"ksql.query.pull.table.scan.enabled": "false",
		"ksql.output.topic.name.prefix":      "x",
		"auto.offset.reset":                  "earliest",
	}; !maps.Equal(sc.defaults, wantDefaults) {
		t.Errorf("defaults %v, want %v", sc.defaults, wantDefaults)
	}
	if len(sc.kafka) != 0 {
		t.Errorf("Kafka client settings %v, want none", sc.kafka)
	}
}
