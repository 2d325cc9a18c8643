package plan_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/sql"
)

var update = flag.Bool("update", false, "add the plans this build makes to testdata/historical_plans")

// historical is one stored plan: the statement it was made from, how it
// was bound, the plan, and what its topology was then.
type historical struct {
	Statement        string          `json:"statement"`
	Binding          string          `json:"binding,omitempty"`
	Plan             json.RawMessage `json:"plan"`
	Explain          string          `json:"explain"`
	Fingerprint      string          `json:"fingerprint"`
	ShapeFingerprint string          `json:"shapeFingerprint"`
	InternalTopics   []string        `json:"internalTopics"`
}

func describe(topo *physical.Topology) (string, string, string, []string) {
	var topics []string
	for _, it := range topo.InternalTopics() {
		topics = append(topics, fmt.Sprintf("%s compact=%v partitions=%d retention=%d", it.Name, it.Compact, it.Partitions, it.RetentionMs))
	}
	return topo.String(), topo.Fingerprint(), topo.ShapeFingerprint(), topics
}

// TestHistoricalPlans proves plan-format compatibility, as ksqlDB's
// historical_plans do: every plan stored under
// testdata/historical_plans/<version>/ (by any build since plans) must
// still decode into the topology it was (the same EXPLAIN, fingerprints
// and internal topics), and every plan this build makes of the corpus
// must be stored (run with -update to add new ones; stored plans are
// never rewritten or removed).
func TestHistoricalPlans(t *testing.T) {
	root := filepath.Join("testdata", "historical_plans")
	dirs, err := os.ReadDir(root)
	if err != nil && !*update {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	n := 0
	for _, d := range dirs {
		v, err := strconv.Atoi(d.Name())
		if err != nil || !d.IsDir() {
			continue
		}
		if v > plan.Version {
			t.Errorf("%s: plans of a version after this build's (%d)", d.Name(), plan.Version)
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, d.Name(), "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var h historical
			if err := json.Unmarshal(b, &h); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			p, err := plan.Decode(h.Plan, "", nil)
			if err != nil {
				t.Errorf("%s: the plan no longer decodes: %v", f, err)
				continue
			}
			explain, fp, shape, topics := describe(p.Query)
			if explain != h.Explain || fp != h.Fingerprint || shape != h.ShapeFingerprint || strings.Join(topics, "\n") != strings.Join(h.InternalTopics, "\n") {
				t.Errorf("%s: the plan decodes into another topology:\n%s%s %s %v\nwas:\n%s%s %s %v", f, explain, fp, shape, topics, h.Explain, h.Fingerprint, h.ShapeFingerprint, h.InternalTopics)
			}
			if v == plan.Version {
				stored[filepath.Base(f)] = true
			}
			n++
		}
	}
	dir := filepath.Join(root, strconv.Itoa(plan.Version))
	var missing []string
	for _, c := range corpus(t) {
		name := c.name + "_" + hash(c.plan) + ".json"
		if stored[name] {
			continue
		}
		if !*update {
			missing = append(missing, name)
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		h := historical{Statement: c.statement, Binding: c.binding, Plan: c.plan}
		h.Explain, h.Fingerprint, h.ShapeFingerprint, h.InternalTopics = describe(c.topo)
		b, err := json.MarshalIndent(h, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("added %s", name)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("this build makes %d plans testdata/historical_plans/%d does not hold (a change to planning or to the plan format): run go test ./plan -run TestHistoricalPlans -update to add them: %s",
			len(missing), plan.Version, strings.Join(missing, ", "))
	}
	if n == 0 && !*update {
		t.Fatal("no historical plans")
	}
}

type corpusCase struct {
	name, statement, binding string
	topo                     *physical.Topology
	plan                     json.RawMessage
}

var sinkName = regexp.MustCompile(`(?i)^\s*(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:STREAM|TABLE|MATERIALIZED\s+VIEW)|INSERT\s+INTO)\s+([A-Za-z0-9_]+)`)

// corpus plans the persistent queries of physical/testdata/topologies
// and partitioners and the expression cases, these also bound as commands recorded before
// plans were (legacy) and with collect limits.
func corpus(t *testing.T) []corpusCase {
	var out []corpusCase
	add := func(text, binding string, sink *catalog.Source, topo *physical.Topology) {
		m := sinkName.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no sink name in %s", text)
		}
		name := strings.ToLower(m[1])
		if binding != "" {
			name += "-" + binding
		}
		b, err := plan.Encode(&plan.Plan{Sink: sink, Query: topo, Target: sink.Name})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		out = append(out, corpusCase{name: name, statement: text, binding: binding, topo: topo, plan: b})
	}
	cat := physicalCatalog()
	datadriven.Walk(t, "../physical/testdata/topologies", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "persistent" {
				return d.Expected
			}
			st, err := sql.Parse(d.Input)
			if err != nil {
				return d.Expected
			}
			ca := st.(*sql.CreateAs)
			binding := ""
			if d.HasArg("legacy-joins") {
				ca.Select.LegacyJoins, binding = true, "legacy-joins"
			}
			sink, err := sql.BindCreateAs(ca, cat)
			if err != nil {
				return d.Expected
			}
			topo, err := physical.Build(physical.AppID("sqlstreams", plan.QueryIDPlaceholder), sink)
			if err != nil {
				return d.Expected
			}
			add(d.Input, binding, sink.Target, topo)
			return d.Expected
		})
	})
	for _, c := range partitionerCases(t) {
		add(c.text, "", c.target, c.topo)
	}
	pcat := plannerCatalog(t)
	tweaks := map[string]func(*sql.Select){
		"": nil,
		"legacy": func(s *sql.Select) {
			s.SQLNulls, s.LegacyFunctions, s.LegacySum, s.LegacyDistinct, s.PositionalAliases, s.LegacyFinal = true, true, true, true, true, true
			s.LegacyDistinctState = true
		},
		"limits": func(s *sql.Select) { s.CollectLimits = map[string]int{"COLLECT_LIST": 5, "COLLECT_SET": 7} },
	}
	for _, c := range exprCases {
		for binding, tweak := range tweaks {
			st, err := sql.Parse(c)
			if err != nil {
				t.Fatal(err)
			}
			ca := st.(*sql.CreateAs)
			if tweak != nil {
				tweak(ca.Select)
			}
			sink, err := sql.BindCreateAs(ca, pcat)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			topo, err := physical.Build(physical.AppID("sqlstreams", plan.QueryIDPlaceholder), sink)
			if err != nil {
				t.Fatal(err)
			}
			add(c, binding, sink.Target, topo)
		}
	}
	return out
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
