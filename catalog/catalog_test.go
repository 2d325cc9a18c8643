package catalog

import (
	"fmt"
	"sync"
	"testing"
)

// TestSnapshots: a snapshot does not change when the catalog does, an
// update replaces a source by a changed copy (readers holding the old one
// see it whole), and readers and a writer may run at once (go test
// -race).
func TestSnapshots(t *testing.T) {
	c := New()
	if err := c.AddSource(&Source{Name: "T", Kind: Table, Topic: "t", MaterializedBy: "Q1", WriterQuery: "Q1"}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AddSource(&Source{Name: "T", Kind: Table}, false); err == nil {
		t.Error("adding T twice without replace succeeded")
	}
	c.AddQuery(&Query{ID: "Q1", Sink: "T"})
	before := c.Snapshot()
	held, _ := c.Source("T")
	if !c.UpdateSource("T", func(s *Source) { s.MaterializedBy, s.WriterQuery = "", "" }) {
		t.Fatal("UpdateSource found no T")
	}
	if held.MaterializedBy != "Q1" || held.WriterQuery != "Q1" {
		t.Errorf("a source a reader holds changed: %+v", held)
	}
	if s, _ := before.Source("T"); s.MaterializedBy != "Q1" {
		t.Errorf("an older snapshot changed: %+v", s)
	}
	if s, _ := c.Source("T"); s.MaterializedBy != "" || s.Topic != "t" {
		t.Errorf("after the update: %+v", s)
	}
	c.UpdateQuery("Q1", func(q *Query) { q.Paused = true })
	if q, _ := before.Query("Q1"); q.Paused {
		t.Error("an older snapshot's query changed")
	}
	if q, _ := c.Query("Q1"); !q.Paused {
		t.Error("UpdateQuery did not pause Q1")
	}
	if c.UpdateSource("NONE", func(*Source) {}) || c.UpdateQuery("NONE", func(*Query) {}) {
		t.Error("an update of a missing name reported one")
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := c.Snapshot()
				for _, s := range snap.Sources() {
					if s.Topic == "" {
						t.Errorf("a half-made source: %+v", s)
						return
					}
				}
				_ = snap.Users("T")
			}
		}()
	}
	for i := range 500 {
		name := fmt.Sprintf("S%d", i%20)
		_ = c.AddSource(&Source{Name: name, Kind: Stream, Topic: "topic-" + name}, true)
		c.UpdateSource(name, func(s *Source) { s.Topic = fmt.Sprintf("topic-%d", i) })
		c.AddQuery(&Query{ID: fmt.Sprintf("Q%d", i), Sources: []string{name}})
		if i%3 == 0 {
			c.DropSource(name)
			c.DropQuery(fmt.Sprintf("Q%d", i))
		}
	}
	close(stop)
	wg.Wait()
}
