package physical_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestTopologies pins topology printouts, node names, application IDs and
// fingerprints: renaming any of them breaks running queries. Regenerate
// with -rewrite only on purpose.
func TestTopologies(t *testing.T) {
	cat := catalog.New()
	cat.AddSource(&catalog.Source{
		Name: "PAGEVIEWS", Kind: catalog.Stream, Topic: "pageviews", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "PAGEID", Type: types.StringType},
			{Name: "VIEWTIME", Type: types.BigintType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "USERS", Kind: catalog.Table, Topic: "users", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "REGION", Type: types.StringType},
			{Name: "LEVEL", Type: types.IntType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "LEVELS", Kind: catalog.Table, Topic: "levels", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "TITLE", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "BADGES", Kind: catalog.Table, Topic: "badges", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "BADGE", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "REGIONS", Kind: catalog.Table, Topic: "regions", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 3,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "REGIONID", Type: types.StringType, Key: true},
			{Name: "NAME", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "CLICKS", Kind: catalog.Stream, Topic: "clicks", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "URL", Type: types.StringType},
		}},
	}, false)
	cat.AddSource(&catalog.Source{
		Name: "PURCHASES", Kind: catalog.Stream, Topic: "purchases", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "AMOUNT", Type: types.IntType},
		}},
	}, false)
	datadriven.RunTest(t, "testdata/topologies", func(t *testing.T, d *datadriven.TestData) string {
		st, err := sql.Parse(d.Input)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		switch d.Cmd {
		case "persistent":
			var id string
			d.ScanArgs(t, "id", &id)
			ca := st.(*sql.CreateAs)
			// legacy-joins plans as a command recorded before join
			// changes carried old rows is replayed.
			ca.Select.LegacyJoins = d.HasArg("legacy-joins")
			sink, err := sql.BindCreateAs(ca, cat)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var opts []physical.BuildOption
			if d.HasArg("wide-repartitions") {
				// As a command recorded before plans is planned.
				opts = append(opts, physical.WideRepartitions)
			}
			if d.HasArg("plain-fk") {
				// As a command recorded before plans is planned.
				opts = append(opts, physical.PlainForeignKeyJoins)
			}
			topo, err := physical.Build(physical.AppID("sqlstreams", id), sink, opts...)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			out := fmt.Sprintf("app id: %s\nsource topics: %v\nfingerprint: %s\n%s%s", topo.AppID, topo.SourceTopics(), topo.Fingerprint(), topo, reads(topo))
			if d.HasArg("stores") {
				out += stores(topo)
			}
			return out
		case "push":
			q, err := sql.BindSelect(st.(*sql.Select), cat)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			topo, err := physical.BuildPush(q)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return fmt.Sprintf("limit: %d\n%s%s", topo.Limit, topo, reads(topo))
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

// reads lists the value columns each sub-topology's source decodes.
func reads(t *physical.Topology) string {
	var b strings.Builder
	for _, st := range t.SubTopologies {
		for k, n := range st.Sources {
			src := n.Op.(*physical.Source)
			var cols []string
			for _, i := range src.Out.ValueIndexes() {
				if src.Read == nil || src.Read[i] {
					cols = append(cols, src.Out.Columns[i].Name)
				}
			}
			if k == 0 {
				fmt.Fprintf(&b, "sub-topology %d reads: %s", st.ID, strings.Join(cols, ", "))
			} else {
				fmt.Fprintf(&b, "sub-topology %d source %s reads: %s", st.ID, src.Topic, strings.Join(cols, ", "))
			}
			if src.Read == nil {
				b.WriteString(" (all)")
			}
			b.WriteString("\n")
		}
		for _, n := range st.Nodes {
			// A repartition that writes some of its rows' columns.
			if r, ok := n.Op.(*physical.Repartition); ok && r.Columns != nil {
				var cols []string
				for _, i := range r.Columns {
					cols = append(cols, r.In.Columns[i].Name)
				}
				fmt.Fprintf(&b, "sub-topology %d %s writes: %s\n", st.ID, n.Name, strings.Join(cols, ", "))
			}
		}
	}
	return b.String()
}

// stores lists the topology's stores and the internal topics it creates.
func stores(t *physical.Topology) string {
	var b strings.Builder
	for _, s := range t.Stores {
		fmt.Fprintf(&b, "store %s (%s, changelog %s, source topic as changelog: %v, schema: %s)\n", s.Name, s.Kind, s.Changelog, s.SourceTopicChangelog, s.Schema)
	}
	var topics []string
	for _, it := range t.InternalTopics() {
		topics = append(topics, fmt.Sprintf("%s (compact: %v, partitions: %d)", it.Name, it.Compact, it.Partitions))
	}
	fmt.Fprintf(&b, "internal topics: [%s]\n", strings.Join(topics, ", "))
	return b.String()
}
