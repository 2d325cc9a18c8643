package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// DefaultTopic is where the embedded registry keeps its schemas, as
// Confluent's registry does (its kafkastore.topic default).
const DefaultTopic = "_schemas"

// Config configures an embedded Registry.
type Config struct {
	// Kafka is how the registry reaches the cluster holding the schemas
	// topic.
	Kafka kafka.Profile
	// Topic is the compacted topic of schemas (default "_schemas").
	Topic string
	// Logger receives the registry's logs (default slog.Default()).
	Logger *slog.Logger
}

// Registry is the embedded Confluent-compatible schema registry. Its state
// is a compacted topic of the records Confluent's registry writes (keys
// {"keytype":"SCHEMA","subject":…,"version":…} and {"keytype":"CONFIG",…},
// values as Confluent writes them); Open replays it, every change is
// produced and acknowledged before it is applied, so a restart — even after
// a SIGKILL — gives back every subject, version and ID. One Registry writes
// a topic: two processes serving the same topic would hand out the same
// IDs. Serve it with Handler. It is safe for concurrent use.
type Registry struct {
	cfg Config
	log *slog.Logger
	cl  *kgo.Client

	mu       sync.Mutex
	subjects map[string]*subject
	ids      map[int]*schemaEntry
	maxID    int
	global   string            // global compatibility level
	configs  map[string]string // per-subject compatibility levels
	// globalMode ("" READWRITE) and modes (per subject) are the
	// registry's modes (mode.go).
	globalMode string
	modes      map[string]string
}

type subject struct {
	versions []*version // ascending by version
}

type version struct {
	version int
	id      int
	deleted bool
}

// schemaEntry is one schema with its global ID.
type schemaEntry struct {
	id         int
	typ        string // "" for AVRO, as Confluent stores it
	text       string
	refs       []Reference
	identity   string // what makes two schemas the same (identity.go)
	registered []subjectVersion
}

// Reference is a registered schema's reference to another: the name its
// text uses and the subject and version that hold it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Records of the schemas topic, in Confluent's layout.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

type schemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted"`
}

type configValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

// Open creates the schemas topic if it is missing (one partition,
// cleanup.policy=compact), replays it and returns the registry.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cl, err := cfg.Kafka.NewClient(kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	r := &Registry{cfg: cfg, log: cfg.Logger, cl: cl, subjects: map[string]*subject{},
		ids: map[int]*schemaEntry{}, global: "BACKWARD", configs: map[string]string{}, modes: map[string]string{}}
	if err := r.replay(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return r, nil
}

// Close closes the registry's Kafka client.
func (r *Registry) Close() { r.cl.Close() }

func (r *Registry) replay(ctx context.Context) error {
	adm := kadm.NewClient(r.cl)
	compact := "compact"
	resp, err := adm.CreateTopic(ctx, 1, r.cfg.Kafka.Topics.ReplicationFactor(), r.cfg.Kafka.Topics.With(map[string]*string{"cleanup.policy": &compact}), r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", r.cfg.Topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", r.cfg.Topic, resp.Err)
	}
	ends, err := adm.ListEndOffsets(ctx, r.cfg.Topic)
	if err != nil {
		return fmt.Errorf("reading the end of %s: %w", r.cfg.Topic, err)
	}
	end, ok := ends.Lookup(r.cfg.Topic, 0)
	if !ok || end.Err != nil {
		return fmt.Errorf("reading the end of %s: %v", r.cfg.Topic, end.Err)
	}
	n := 0
	if end.Offset > 0 {
		rd, err := r.cfg.Kafka.NewClient(
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			return err
		}
		defer rd.Close()
		next := int64(0)
		for next < end.Offset {
			// The records before the end may be gone (a compacted
			// tombstone): a quiet poll ends the replay.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			fs := rd.PollFetches(pctx)
			cancel()
			if err := ctx.Err(); err != nil {
				return err
			}
			if fs.NumRecords() == 0 && pctx.Err() != nil {
				r.log.Info("schema registry: nothing after offset in the schemas topic; its end was compacted away", "offset", next, "end", end.Offset)
				break
			}
			for _, e := range fs.Errors() {
				return fmt.Errorf("reading %s: %w", r.cfg.Topic, e.Err)
			}
			fs.EachRecord(func(rec *kgo.Record) {
				next = rec.Offset + 1
				if err := r.apply(rec.Key, rec.Value); err != nil {
					r.log.Warn("schema registry: skipping a record of the schemas topic", "offset", rec.Offset, "err", err)
					return
				}
				n++
			})
		}
	}
	r.log.Info("schema registry restored", "topic", r.cfg.Topic, "records", n, "schemas", len(r.ids), "subjects", len(r.subjects))
	return nil
}

// apply applies one record of the schemas topic to the in-memory state.
// The caller holds r.mu or is replaying.
func (r *Registry) apply(k, v []byte) error {
	var key recordKey
	if err := json.Unmarshal(k, &key); err != nil {
		return err
	}
	switch key.KeyType {
	case "SCHEMA":
		if key.Subject == nil {
			return fmt.Errorf("SCHEMA record without a subject")
		}
		if v == nil {
			r.removeVersion(*key.Subject, key.Version)
			return nil
		}
		var sv schemaValue
		if err := json.Unmarshal(v, &sv); err != nil {
			return err
		}
		r.putVersion(sv)
	case "CONFIG":
		var level string
		if v != nil {
			var cv configValue
			if err := json.Unmarshal(v, &cv); err != nil {
				return err
			}
			level = cv.CompatibilityLevel
		}
		switch {
		case key.Subject == nil && level != "":
			r.global = level
		case key.Subject == nil:
			r.global = "BACKWARD"
		case level == "":
			delete(r.configs, *key.Subject)
		default:
			r.configs[*key.Subject] = level
		}
	case "MODE":
		var mv *modeValue
		if v != nil {
			mv = &modeValue{}
			if err := json.Unmarshal(v, mv); err != nil {
				return err
			}
		}
		r.applyMode(key.Subject, mv)
	case "NOOP", "DELETE_SUBJECT", "CLEAR_SUBJECT":
		// Confluent's other record kinds; its SCHEMA records carry
		// deletions too.
	default:
		return fmt.Errorf("unknown keytype %q", key.KeyType)
	}
	return nil
}

func (r *Registry) putVersion(sv schemaValue) {
	e := r.ids[sv.ID]
	if e == nil {
		typ := sv.SchemaType
		if typ == "AVRO" {
			typ = ""
		}
		// The identity is recomputed from the text, here as at replay:
		// records keep Confluent's layout.
		e = &schemaEntry{id: sv.ID, typ: typ, text: sv.Schema, refs: sv.References,
			identity: r.identityOf(typ, sv.Schema, sv.References)}
		r.ids[sv.ID] = e
		r.maxID = max(r.maxID, sv.ID)
	}
	sub := r.subjects[sv.Subject]
	if sub == nil {
		sub = &subject{}
		r.subjects[sv.Subject] = sub
	}
	for _, v := range sub.versions {
		if v.version == sv.Version {
			v.id, v.deleted = sv.ID, sv.Deleted
			return
		}
	}
	sub.versions = append(sub.versions, &version{version: sv.Version, id: sv.ID, deleted: sv.Deleted})
	sort.Slice(sub.versions, func(i, j int) bool { return sub.versions[i].version < sub.versions[j].version })
	e.registered = append(e.registered, subjectVersion{sv.Subject, sv.Version})
}

func (r *Registry) removeVersion(subj string, ver int) {
	sub := r.subjects[subj]
	if sub == nil {
		return
	}
	for i, v := range sub.versions {
		if v.version == ver {
			sub.versions = append(sub.versions[:i], sub.versions[i+1:]...)
			if e := r.ids[v.id]; e != nil {
				for j, sv := range e.registered {
					if sv.Subject == subj && sv.Version == ver {
						e.registered = append(e.registered[:j], e.registered[j+1:]...)
						break
					}
				}
				// The ID stays known: records written with it must
				// still be readable, and IDs are never reused.
			}
			break
		}
	}
	if len(sub.versions) == 0 {
		delete(r.subjects, subj)
	}
}

// write produces one record to the schemas topic and, once it is
// acknowledged, applies it. The caller holds r.mu.
func (r *Registry) write(ctx context.Context, key recordKey, value any) error {
	k, err := json.Marshal(key)
	if err != nil {
		return err
	}
	var v []byte
	if value != nil {
		if v, err = json.Marshal(value); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.cl.ProduceSync(ctx, &kgo.Record{Topic: r.cfg.Topic, Partition: 0, Key: k, Value: v}).FirstErr(); err != nil {
		return fmt.Errorf("storing in %s: %w", r.cfg.Topic, err)
	}
	return r.apply(k, v)
}

func strPtr(s string) *string { return &s }
