package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// QueryIDPlaceholder stands, in a plan recorded before its command's
// offset is known, for the ID of the query the command starts (which
// derives from that offset): the topology is built under it, so that
// its application ID, internal topics and stores name it, and Decode
// puts the ID in its place.
const QueryIDPlaceholder = "${QUERY_ID}"

// Plan is what a catalog command records of what it creates, so that a
// replay, a restart or an upgrade creates the same without binding the
// statement again: the source it registers, the persistent query it
// starts and how that query runs.
type Plan struct {
	// Sink is the stream or table the command registers in the
	// catalog: the sink of a CREATE … AS SELECT, the source of a CREATE
	// STREAM|TABLE. Nil for INSERT INTO … SELECT.
	Sink *catalog.Source
	// Query is the persistent query's topology: a CREATE … AS or INSERT
	// INTO's query, a CREATE TABLE's materialization (CST_…). Nil for
	// a CREATE STREAM.
	Query *physical.Topology
	// Materialization, for a CREATE TABLE … AS whose own stores do not
	// answer pull queries, is the query that keeps the table's latest
	// rows from its topic (<query ID>_MATERIALIZE).
	Materialization *physical.Topology
	// Target is the name of the stream or table the query writes (its
	// Sink's, or INSERT INTO's target).
	Target string
	// Sources are the names of the sources the query reads.
	Sources []string
	// InputPartitions is the partition count of the query's input: its
	// internal topics have as many, unless they say otherwise.
	InputPartitions int32
	// PropagateHeaders carries the input records' headers onto the
	// query's output (exec.Config.PropagateHeaders); KsqlDelimited
	// quotes DELIMITED values as ksqlDB does (exec.Config.KsqlDelimited).
	PropagateHeaders bool
	KsqlDelimited    bool
}

// document is a plan as it is stored.
type document struct {
	Version          int             `json:"version"`
	Sink             any             `json:"sink,omitempty"`
	Query            json.RawMessage `json:"query,omitempty"`
	Materialization  json.RawMessage `json:"materialization,omitempty"`
	Target           string          `json:"target,omitempty"`
	Sources          []string        `json:"sources,omitempty"`
	InputPartitions  int32           `json:"inputPartitions,omitempty"`
	PropagateHeaders bool            `json:"propagateHeaders,omitempty"`
	KsqlDelimited    bool            `json:"ksqlDelimited,omitempty"`
}

// Encode encodes p at the current Version.
func Encode(p *Plan) (json.RawMessage, error) {
	doc := document{Version: Version, Target: p.Target, Sources: p.Sources, InputPartitions: p.InputPartitions,
		PropagateHeaders: p.PropagateHeaders, KsqlDelimited: p.KsqlDelimited}
	if p.Sink != nil {
		var e encoder
		x, err := e.value(reflect.ValueOf(p.Sink).Elem())
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", p.Sink.Name, err)
		}
		doc.Sink = x
	}
	var err error
	if p.Query != nil {
		if doc.Query, err = EncodeTopology(p.Query); err != nil {
			return nil, err
		}
	}
	if p.Materialization != nil {
		if doc.Materialization, err = EncodeTopology(p.Materialization); err != nil {
			return nil, err
		}
	}
	return json.Marshal(doc)
}

// Decode decodes a plan Encode encoded, of this Version or an earlier
// one, for the query queryID (which replaces QueryIDPlaceholder).
// schemas, the server's schema registry (may be nil), is given to every
// format's options.
func Decode(b []byte, queryID string, schemas types.SchemaSource) (*Plan, error) {
	if queryID != "" {
		b = bytes.ReplaceAll(b, []byte(QueryIDPlaceholder), []byte(queryID))
	}
	var doc struct {
		document
		Sink json.RawMessage `json:"sink,omitempty"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decoding plan: %w", err)
	}
	if doc.Version < 1 || doc.Version > Version {
		return nil, fmt.Errorf("plan format version %d: this build reads versions 1 to %d", doc.Version, Version)
	}
	p := &Plan{Target: doc.Target, Sources: doc.Sources, InputPartitions: doc.InputPartitions, PropagateHeaders: doc.PropagateHeaders, KsqlDelimited: doc.KsqlDelimited}
	if len(doc.Sink) > 0 && string(doc.Sink) != "null" {
		x, err := tree(doc.Sink)
		if err != nil {
			return nil, err
		}
		p.Sink = &catalog.Source{}
		d := decoder{schemas: schemas}
		if err := d.value(x, reflect.ValueOf(p.Sink).Elem()); err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
	}
	var err error
	if len(doc.Query) > 0 {
		if p.Query, err = DecodeTopology(doc.Query, schemas); err != nil {
			return nil, err
		}
	}
	if len(doc.Materialization) > 0 {
		if p.Materialization, err = DecodeTopology(doc.Materialization, schemas); err != nil {
			return nil, err
		}
	}
	return p, nil
}
