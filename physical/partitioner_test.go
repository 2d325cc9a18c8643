package physical_test

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestPartitioners pins the topologies of queries over sources declared
// WITH (PARTITIONER=…): which side a join repartitions, and by which
// function (the EXPLAIN notes "partitioned by crc32"), for sources whose
// topics librdkafka's producers wrote. Sources without PARTITIONER keep
// the topologies of testdata/topologies.
func TestPartitioners(t *testing.T) {
	cat := catalog.New()
	datadriven.RunTest(t, "testdata/partitioners", func(t *testing.T, d *datadriven.TestData) string {
		st, err := sql.Parse(d.Input)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		switch d.Cmd {
		case "source":
			src, err := sql.BindCreateSource(st.(*sql.CreateSource))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			if err := cat.AddSource(src, false); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%s %s partitioner %s\n", src.Kind, src.Name, src.Partitioner)
		case "persistent":
			var id string
			d.ScanArgs(t, "id", &id)
			var sink *planner.Sink
			var err error
			if is, ok := st.(*sql.InsertSelect); ok {
				sink, err = sql.BindInsertSelect(is, cat)
			} else {
				sink, err = sql.BindCreateAs(st.(*sql.CreateAs), cat)
			}
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			topo, err := physical.Build(physical.AppID("sqlstreams", id), sink)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return fmt.Sprintf("source topics: %v\n%s", topo.SourceTopics(), topo)
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
