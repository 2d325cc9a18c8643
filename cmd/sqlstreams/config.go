package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/sql"
)

// A server's settings come from, highest precedence first: its command
// line flags, their SQLSTREAMS_* environment variables, the --config file,
// and the defaults. The file is a Java properties file (key=value or
// key: value lines, # and ! comments, a trailing backslash continues a
// line) with ksqlDB's ksql-server.properties names where ksqlDB has the
// setting (configKeys) and the flags' own names otherwise (pg-addr=…).

// configKeys maps ksqlDB server property names to the flags they set.
var configKeys = map[string]string{
	"listeners":                                        "http-addr",
	"ksql.service.id":                                  "service-id",
	"bootstrap.servers":                                "bootstrap-servers",
	"ksql.streams.bootstrap.servers":                   "bootstrap-servers",
	"ksql.streams.num.stream.threads":                  "num-stream-threads",
	"ksql.streams.processing.guarantee":                "processing-guarantee",
	"ksql.streams.commit.interval.ms":                  "commit-interval-ms",
	"ksql.streams.default.dsl.store":                   "default-dsl-store",
	"ksql.streams.transaction.timeout.ms":              "transaction-timeout-ms",
	"ksql.streams.producer.transaction.timeout.ms":     "transaction-timeout-ms",
	"ksql.streams.num.standby.replicas":                "num-standby-replicas",
	"ksql.streams.acceptable.recovery.lag":             "acceptable-recovery-lag",
	"ksql.streams.probing.rebalance.interval.ms":       "probing-rebalance-interval-ms",
	"ksql.schema.registry.url":                         "schema-registry-url",
	"ksql.queries.file":                                "queries-file",
	"ksql.logging.processing.rows.include":             "processing-log-rows",
	"ksql.logging.processing.topic.name":               "processing-log-topic",
	"ksql.logging.processing.topic.partitions":         "processing-log-topic-partitions",
	"ksql.logging.processing.topic.replication.factor": "processing-log-topic-replication",
	"ksql.logging.processing.topic.auto.create":        "processing-log-topic-auto-create",
	"ksql.logging.processing.stream.name":              "processing-log-stream",
	"ksql.logging.processing.stream.auto.create":       "processing-log-stream-auto-create",
}

// unknownSetting says why a --config key that sets no flag, is no Kafka
// client setting and no property of the engine's registry
// (docs/properties.md) is ignored.
func unknownSetting(key string) string {
	_, err := engine.LookupProperty(key)
	if se, ok := err.(*sql.Error); ok && se.Code != sql.CodeUndefinedObject {
		return fmt.Sprintf("setting %q ignored: %s", key, se.Msg)
	}
	return fmt.Sprintf("unknown setting %q ignored", key)
}

// configValue is a setting read from the config file.
type configValue struct {
	key, value string
	line       int
}

// propLine is one key=value setting of a properties file.
type propLine struct {
	key, value string
	line       int
}

// readProperties reads a Java properties file: key=value or key: value
// lines, # and ! comments, a trailing backslash continuing a line, and
// ${VAR} (or ${env:VAR}) in a value replaced by the environment
// variable's value.
func readProperties(path string) ([]propLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []propLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, start := 0, 0
	var logical strings.Builder
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if logical.Len() == 0 {
			start = n
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			logical.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		logical.WriteString(line)
		text := logical.String()
		logical.Reset()
		i := strings.IndexAny(text, "=:")
		if i <= 0 {
			// Not the line itself: it may hold a secret.
			return nil, fmt.Errorf("%s line %d: want key=value", path, start)
		}
		key, value := strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+1:])
		if value, err = expandEnv(value); err != nil {
			return nil, fmt.Errorf("%s line %d (%s): %w", path, start, key, err)
		}
		out = append(out, propLine{key: key, value: value, line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// fileConfig is what a --config file holds besides flags.
type fileConfig struct {
	// kafka are the Kafka client settings (security.protocol, sasl.*,
	// ssl.*, ksql.streams.producer.*, …; see kafka.Parse).
	kafka []kafka.Property
	// defaults are the server's defaults of the engine's session and
	// query properties (engine.Config.Properties), by registry name.
	defaults map[string]string
	// warnings name the keys that are none of these, and their lines.
	warnings []string
}

// readConfig reads a properties file into the flags its keys set and
// the rest it holds (fileConfig). A property of the engine's registry
// with a bad value is an error naming key and line.
func readConfig(fs *flag.FlagSet, path string) (map[string]configValue, fileConfig, error) {
	var sc fileConfig
	lines, err := readProperties(path)
	if err != nil {
		return nil, sc, fmt.Errorf("--config: %w", err)
	}
	out := map[string]configValue{}
	for _, l := range lines {
		key, value := l.key, l.value
		name, ok := configKeys[key]
		if !ok && fs.Lookup(key) != nil && key != "config" {
			name, ok = key, true
		}
		if _, err := engine.LookupProperty(key); !ok && err == nil {
			if sc.defaults == nil {
				sc.defaults = map[string]string{}
			}
			if err := engine.SetProperty(sc.defaults, key, value); err != nil {
				return nil, sc, fmt.Errorf("%s line %d (%s): %v", path, l.line, key, err)
			}
			continue
		}
		if !ok && kafka.IsClientProperty(key) {
			sc.kafka = append(sc.kafka, kafka.Property{Key: key, Value: value, Source: fmt.Sprintf("%s line %d", path, l.line)})
			continue
		}
		if !ok {
			sc.warnings = append(sc.warnings, fmt.Sprintf("%s line %d: %s", path, l.line, unknownSetting(key)))
			continue
		}
		if key == "listeners" {
			// ksqlDB's listeners=http://0.0.0.0:8088[,…]: the first one.
			value = strings.TrimSpace(strings.Split(value, ",")[0])
			value = strings.TrimPrefix(strings.TrimPrefix(value, "http://"), "https://")
		}
		out[name] = configValue{key: key, value: value, line: l.line}
	}
	return out, sc, nil
}

// applyConfig sets the flags the file names, unless the command line or
// the environment set them, and returns where every flag's value came
// from. A malformed value is an error naming key and line.
func applyConfig(fs *flag.FlagSet, path string, file map[string]configValue) ([]engine.Setting, error) {
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	names := make([]string, 0, len(file))
	for name := range file {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cv := file[name]
		if onCmdLine[name] {
			continue
		}
		if _, ok := os.LookupEnv(envName(name)); ok {
			continue
		}
		if err := fs.Set(name, cv.value); err != nil {
			return nil, fmt.Errorf("%s line %d: %s: bad value %q: %v", path, cv.line, cv.key, cv.value, err)
		}
	}
	var out []engine.Setting
	fs.VisitAll(func(f *flag.Flag) {
		src := "default"
		_, inEnv := os.LookupEnv(envName(f.Name))
		cv, inFile := file[f.Name]
		switch {
		case onCmdLine[f.Name]:
			src = "flag --" + f.Name
		case inEnv:
			src = "environment " + envName(f.Name)
		case inFile:
			src = fmt.Sprintf("%s line %d (%s)", path, cv.line, cv.key)
		}
		value := f.Value.String()
		if strings.Contains(f.Name, "password") || strings.Contains(f.Name, "users") || strings.Contains(f.Name, "basic-auth") || strings.Contains(f.Name, "secret") {
			value = "[hidden]"
		}
		out = append(out, engine.Setting{Name: f.Name, Value: value, Source: src})
	})
	return out, nil
}
