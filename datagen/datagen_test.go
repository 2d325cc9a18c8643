package datagen

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

func gen(t testing.TB, cfg Config) Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDeterministic(t *testing.T) {
	for _, q := range Quickstarts {
		a, b := gen(t, Config{Quickstart: q, Seed: 42}), gen(t, Config{Quickstart: q, Seed: 42})
		c := gen(t, Config{Quickstart: q, Seed: 43})
		var ra, rb, rc Record
		differ := false
		for i := 0; i < 2000; i++ {
			a.Next(&ra)
			b.Next(&rb)
			c.Next(&rc)
			if ra.Topic != rb.Topic || !bytes.Equal(ra.Key, rb.Key) || !bytes.Equal(ra.Value, rb.Value) || !ra.Timestamp.Equal(rb.Timestamp) {
				t.Fatalf("%s record %d differs:\n%s %s\n%s %s", q, i, ra.Key, ra.Value, rb.Key, rb.Value)
			}
			if !bytes.Equal(ra.Value, rc.Value) {
				differ = true
			}
		}
		if !differ {
			t.Errorf("%s: seeds 42 and 43 gave identical values", q)
		}
	}
}

// TestStart checks that Config.Start generates the same records as skipping.
func TestStart(t *testing.T) {
	a := gen(t, Config{Quickstart: "nexmark", Seed: 7})
	b := gen(t, Config{Quickstart: "nexmark", Seed: 7, Start: 500})
	var ra, rb Record
	for i := 0; i < 500; i++ {
		a.Next(&ra)
	}
	for i := 0; i < 500; i++ {
		a.Next(&ra)
		b.Next(&rb)
		if !bytes.Equal(ra.Value, rb.Value) || ra.Index != rb.Index {
			t.Fatalf("record %d differs", ra.Index)
		}
	}
}

func TestJSONValid(t *testing.T) {
	want := map[string][]string{
		"pageviews": {"VIEWTIME", "USERID", "PAGEID"},
		"users":     {"REGISTERTIME", "USERID", "REGIONID", "GENDER"},
		"orders":    {"ORDERTIME", "ORDERID", "ITEMID", "ORDERUNITS", "ADDRESS"},
		KindPerson:  {"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"},
		KindAuction: {"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category", "extra"},
		KindBid:     {"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
	}
	for _, q := range Quickstarts {
		g := gen(t, Config{Quickstart: q, Seed: 1})
		var r Record
		for i := 0; i < 5000; i++ {
			g.Next(&r)
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("%s record %d: %v: %s", q, i, err, r.Value)
			}
			fields := want[r.Kind]
			if len(m) != len(fields) {
				t.Fatalf("%s record %d: %d fields, want %d: %s", q, i, len(m), len(fields), r.Value)
			}
			for _, f := range fields {
				if _, ok := m[f]; !ok {
					t.Fatalf("%s record %d: no %s: %s", q, i, f, r.Value)
				}
			}
			switch r.Kind {
			case "pageviews", "users":
				if m["USERID"] != string(r.Key) {
					t.Fatalf("key %s, USERID %v", r.Key, m["USERID"])
				}
			case "orders":
				a := m["ADDRESS"].(map[string]any)
				if len(a) != 3 || a["CITY"] == nil || a["STATE"] == nil || a["ZIPCODE"] == nil {
					t.Fatalf("address %v", a)
				}
				if strconv.FormatFloat(m["ORDERID"].(float64), 'f', -1, 64) != string(r.Key) {
					t.Fatalf("key %s, ORDERID %v", r.Key, m["ORDERID"])
				}
			case KindPerson, KindAuction:
				if strconv.FormatFloat(m["id"].(float64), 'f', -1, 64) != string(r.Key) {
					t.Fatalf("key %s, id %v", r.Key, m["id"])
				}
			case KindBid:
				if strconv.FormatFloat(m["auction"].(float64), 'f', -1, 64) != string(r.Key) {
					t.Fatalf("key %s, auction %v", r.Key, m["auction"])
				}
			}
			if i < 3 {
				t.Logf("%s %s %s %s", r.Topic, r.Timestamp.Format("15:04:05.000000"), r.Key, r.Value)
			}
		}
	}
}

func TestPageviewsRanges(t *testing.T) {
	g := gen(t, Config{Quickstart: "pageviews", Seed: 3})
	users, pages := map[string]bool{}, map[string]bool{}
	var r Record
	for i := 0; i < 20000; i++ {
		g.Next(&r)
		var m map[string]any
		json.Unmarshal(r.Value, &m)
		users[m["USERID"].(string)] = true
		pages[m["PAGEID"].(string)] = true
		if want := DefaultBase.UnixMilli() + int64(i); int64(m["VIEWTIME"].(float64)) != want {
			t.Fatalf("VIEWTIME %v, want %d", m["VIEWTIME"], want)
		}
	}
	if len(users) != 9 || !users["User_1"] || !users["User_9"] || len(pages) != 99 || !pages["Page_99"] {
		t.Fatalf("%d users, %d pages", len(users), len(pages))
	}
}

func TestNexmarkRatio(t *testing.T) {
	g := gen(t, Config{Quickstart: "nexmark", Seed: 1, Topic: "nx_"})
	counts := map[string]int{}
	topics := map[string]int{}
	var r Record
	for i := 0; i < 5000; i++ {
		g.Next(&r)
		counts[r.Kind]++
		topics[r.Topic]++
	}
	if counts[KindPerson] != 100 || counts[KindAuction] != 300 || counts[KindBid] != 4600 {
		t.Fatalf("counts %v", counts)
	}
	if topics["nx_persons"] != 100 || topics["nx_auctions"] != 300 || topics["nx_bids"] != 4600 {
		t.Fatalf("topics %v", topics)
	}
}

// TestNexmarkIDs checks person/auction ids follow the event number and
// bids refer to in-flight auctions, skewed towards hot ones.
func TestNexmarkIDs(t *testing.T) {
	g := gen(t, Config{Quickstart: "nexmark", Seed: 5})
	var r Record
	var lastPerson, lastAuction int64 = firstPersonID - 1, firstAuctionID - 1
	perAuction := map[int64]int{}
	bids, hotBidder, bytesByKind := 0, 0, map[string]int{}
	n := 200000
	for i := 0; i < n; i++ {
		g.Next(&r)
		bytesByKind[r.Kind] += len(r.Value)
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case KindPerson:
			id := int64(m["id"].(float64))
			if id != lastPerson+1 {
				t.Fatalf("event %d: person %d after %d", i, id, lastPerson)
			}
			lastPerson = id
		case KindAuction:
			id := int64(m["id"].(float64))
			if id != lastAuction+1 {
				t.Fatalf("event %d: auction %d after %d", i, id, lastAuction)
			}
			lastAuction = id
			if int64(m["expires"].(float64)) <= int64(m["dateTime"].(float64)) {
				t.Fatalf("auction expires before it starts: %s", r.Value)
			}
			if int64(m["reserve"].(float64)) < int64(m["initialBid"].(float64)) {
				t.Fatalf("reserve < initialBid: %s", r.Value)
			}
		case KindBid:
			bids++
			a := int64(m["auction"].(float64))
			if a > lastAuction+auctionIDLead || a < lastAuction-numInFlightAuctions {
				t.Fatalf("event %d: bid on auction %d, last auction %d", i, a, lastAuction)
			}
			perAuction[a]++
			b := int64(m["bidder"].(float64))
			if (b-firstPersonID-1)%hotBidderRound == 0 {
				hotBidder++
			}
		}
	}
	// Hot auctions: auction ids that are multiples of 100 (base 0) get
	// about half of all bids, though they are 1 in 100 auctions.
	hot := 0
	for a, c := range perAuction {
		if (a-firstAuctionID)%hotAuctionRound == 0 {
			hot += c
		}
	}
	frac := float64(hot) / float64(bids)
	if frac < 0.45 || frac > 0.56 {
		t.Fatalf("hot auctions got %.3f of bids, want about 0.5", frac)
	}
	if f := float64(hotBidder) / float64(bids); f < 0.72 || f > 0.80 {
		t.Fatalf("hot bidders made %.3f of bids, want about 0.75", f)
	}
	t.Logf("hot auction share %.3f, hot bidder share %.3f; avg bytes person %d auction %d bid %d", frac,
		float64(hotBidder)/float64(bids), bytesByKind[KindPerson]/(n/50), bytesByKind[KindAuction]/(3*n/50), bytesByKind[KindBid]/(46*n/50))
}

func BenchmarkNexmark(b *testing.B) {
	g := gen(b, Config{Quickstart: "nexmark", Seed: 1})
	var r Record
	var n int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Next(&r)
		n += int64(len(r.Value))
	}
	b.SetBytes(n / int64(b.N))
}

func BenchmarkPageviews(b *testing.B) {
	g := gen(b, Config{Quickstart: "pageviews", Seed: 1})
	var r Record
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		g.Next(&r)
	}
}

// TestNexmarkOutOfOrder checks the generator's outOfOrderGroupSize: each
// group of n events takes the group's n event times, shuffled, and the
// event times go back by at most n-1 gaps; values other than the
// timestamps are those of the in-order run.
func TestNexmarkOutOfOrder(t *testing.T) {
	const n, events = 10, 1000
	inter := time.Millisecond
	inOrder, _ := New(Config{Quickstart: "nexmark", Seed: 7, InterEvent: inter})
	shuffled, _ := New(Config{Quickstart: "nexmark", Seed: 7, InterEvent: inter, OutOfOrderGroupSize: n})
	var a, b Record
	backwards := 0
	var last time.Time
	seen := map[int64]bool{}
	for i := int64(0); i < events; i++ {
		inOrder.Next(&a)
		shuffled.Next(&b)
		if a.Topic != b.Topic || string(a.Key) != string(b.Key) {
			t.Fatalf("event %d: %s %s vs %s %s", i, a.Topic, a.Key, b.Topic, b.Key)
		}
		at := b.Timestamp.Sub(DefaultBase) / inter
		if int64(at)/n != i/n {
			t.Fatalf("event %d has the time of event %d, outside its group", i, at)
		}
		seen[int64(at)] = true
		if b.Timestamp.Before(last) {
			backwards++
		}
		last = b.Timestamp
		var v struct{ DateTime int64 }
		if err := json.Unmarshal(b.Value, &v); err != nil {
			t.Fatal(err)
		}
		if v.DateTime != b.Timestamp.UnixMilli() {
			t.Fatalf("event %d: dateTime %d, record time %d", i, v.DateTime, b.Timestamp.UnixMilli())
		}
	}
	if len(seen) != events {
		t.Errorf("%d distinct event times over %d events: each group's times are a permutation", len(seen), events)
	}
	if backwards < events/n {
		t.Errorf("only %d events go back in time", backwards)
	}
}
