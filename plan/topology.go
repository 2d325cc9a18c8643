package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// Version is the plan format this build writes. A build reads every
// version up to its own; a plan of a later version is refused.
//
// Version 1: the topology as encoded by EncodeTopology.
const Version = 1

// topology is a physical.Topology as it is stored. Everything the
// topology holds is recorded, derived parts included (sub-topologies,
// the columns each source reads, changelog partitions), so that a later
// build derives nothing again: the topology decoded is the topology
// encoded.
type topology struct {
	AppID string `json:"appId"`
	Limit int64  `json:"limit"`
	// Stores are every store the nodes use, each once; the first
	// TopologyStores of them are Topology.Stores, in order.
	Stores         []any  `json:"stores"`
	TopologyStores int    `json:"topologyStores"`
	Nodes          []node `json:"nodes"`
	SubTopologies  []sub  `json:"subTopologies"`
	// Dialect is physical.Topology.Dialect (left out for ksqlDB's).
	Dialect string `json:"dialect,omitempty"`
}

type node struct {
	Name   string `json:"name"`
	Inputs []int  `json:"inputs,omitempty"`
	Op     any    `json:"op"`
}

type sub struct {
	Nodes   []int `json:"nodes"`
	Sources []int `json:"sources"`
}

// EncodeTopology encodes t as self-describing JSON (see the value
// encoding in value.go).
func EncodeTopology(t *physical.Topology) (json.RawMessage, error) {
	var e encoder
	for _, s := range t.Stores {
		e.store(s)
	}
	out := topology{AppID: t.AppID, Limit: t.Limit, TopologyStores: len(t.Stores), Dialect: t.Dialect}
	for i, n := range t.Nodes {
		if n.ID != i {
			return nil, fmt.Errorf("node %s has ID %d at %d", n.Name, n.ID, i)
		}
		op, err := e.value(reflect.ValueOf(&n.Op).Elem())
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		jn := node{Name: n.Name, Op: op}
		for _, in := range n.Inputs {
			jn.Inputs = append(jn.Inputs, in.ID)
		}
		out.Nodes = append(out.Nodes, jn)
	}
	for _, st := range t.SubTopologies {
		s := sub{Nodes: []int{}, Sources: []int{}}
		for _, n := range st.Nodes {
			s.Nodes = append(s.Nodes, n.ID)
		}
		for _, n := range st.Sources {
			s.Sources = append(s.Sources, n.ID)
		}
		out.SubTopologies = append(out.SubTopologies, s)
	}
	for _, s := range e.stores {
		x, err := e.value(reflect.ValueOf(s).Elem())
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", s.Name, err)
		}
		out.Stores = append(out.Stores, x)
	}
	return json.Marshal(out)
}

// DecodeTopology decodes a topology EncodeTopology encoded. schemas, the
// server's schema registry (may be nil), is given to every format's
// options, as the engine gives it to every source and sink.
func DecodeTopology(b []byte, schemas types.SchemaSource) (*physical.Topology, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var in struct {
		topology
		Stores []json.RawMessage `json:"stores"`
	}
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("decoding plan: %w", err)
	}
	d := decoder{schemas: schemas}
	for range in.Stores {
		d.stores = append(d.stores, &physical.Store{})
	}
	for i, raw := range in.Stores {
		x, err := tree(raw)
		if err != nil {
			return nil, err
		}
		if err := d.value(x, reflect.ValueOf(d.stores[i]).Elem()); err != nil {
			return nil, fmt.Errorf("store %d: %w", i, err)
		}
	}
	if in.TopologyStores > len(d.stores) {
		return nil, fmt.Errorf("plan has %d stores, not %d", len(d.stores), in.TopologyStores)
	}
	t := &physical.Topology{AppID: in.AppID, Limit: in.Limit, Dialect: in.Dialect, Stores: d.stores[:in.TopologyStores:in.TopologyStores]}
	nodeAt := func(i int) (*physical.Node, error) {
		if i < 0 || i >= len(t.Nodes) {
			return nil, fmt.Errorf("node %d is not in the plan", i)
		}
		return t.Nodes[i], nil
	}
	for i, jn := range in.Nodes {
		n := &physical.Node{ID: i, Name: jn.Name}
		for _, id := range jn.Inputs {
			if id >= i {
				return nil, fmt.Errorf("node %s reads node %d, which comes after it", jn.Name, id)
			}
			in, err := nodeAt(id)
			if err != nil {
				return nil, err
			}
			n.Inputs = append(n.Inputs, in)
		}
		if err := d.value(jn.Op, reflect.ValueOf(&n.Op).Elem()); err != nil {
			return nil, fmt.Errorf("node %s: %w", jn.Name, err)
		}
		if n.Op == nil {
			return nil, fmt.Errorf("node %s has no op", jn.Name)
		}
		t.Nodes = append(t.Nodes, n)
	}
	for i, js := range in.SubTopologies {
		st := &physical.SubTopology{ID: i}
		for _, id := range js.Nodes {
			n, err := nodeAt(id)
			if err != nil {
				return nil, err
			}
			st.Nodes = append(st.Nodes, n)
		}
		for _, id := range js.Sources {
			n, err := nodeAt(id)
			if err != nil {
				return nil, err
			}
			if _, ok := n.Op.(*physical.Source); !ok {
				return nil, fmt.Errorf("sub-topology %d: node %s is not a source", i, n.Name)
			}
			st.Sources = append(st.Sources, n)
		}
		t.SubTopologies = append(t.SubTopologies, st)
	}
	return t, nil
}

// tree decodes raw JSON into maps, slices and json.Numbers.
func tree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return x, nil
}
