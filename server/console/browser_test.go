package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// TestConsoleInBrowser drives the console in headless Chromium against a
// real server (embedded broker, engine, REST server): it creates a stream
// and a CSAS from the editor with Ctrl-Enter, sees the query RUNNING,
// produces records and sees the throughput chart and a push query's rows
// move, stops the push query with Esc, shows an error at its line:column,
// draws the topology, and TERMINATEs the query through the confirmation
// dialog. Screenshots go to the test's temp dir (or $CONSOLE_SCREENSHOTS).
func TestConsoleInBrowser(t *testing.T) {
	bin := testtool.NeedAny(t, []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"},
		"apt-get install chromium; scripts/deps.sh installs it for scripts/test")
	shots := os.Getenv("CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()

	step := 0
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		step++
		if err := os.WriteFile(filepath.Join(shots, fmt.Sprintf("%02d-%s.png", step, name)), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			shot("failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	// waitJS polls a JavaScript condition until it is true.
	waitJS := func(what, cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(45*time.Second))); err != nil {
			shot("failed")
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	eval := func(what, expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	// runSQL puts text in the editor and runs it with Ctrl-Enter.
	runSQL := func(text string) {
		t.Helper()
		run("typing "+text,
			chromedp.Navigate(testURL+"/#editor"),
			chromedp.WaitVisible(chromedp.CSS("#sql")),
			chromedp.SetValue(chromedp.CSS("#sql"), text),
			chromedp.Focus(chromedp.CSS("#sql")),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		)
	}

	run("opening the console", chromedp.Navigate(testURL+"/"), chromedp.WaitVisible(chromedp.CSS("#sql")))
	shot("editor")

	// Keyboard only: typing opens the completions, Tab takes one.
	run("typing a keyword", chromedp.Focus(chromedp.CSS("#sql")), chromedp.KeyEvent("sel"))
	waitJS("the completions", `!document.querySelector('#completions').hidden`)
	shot("completion")
	run("taking a completion", chromedp.KeyEvent(kb.Tab))
	waitJS("the completed word", `document.querySelector('#sql').value === 'select'`)

	// A statement error is shown at its line:column in the editor.
	runSQL("SHOW STREAMS;\nSELECT * FROM\n  no_such_stream EMIT CHANGES;")
	waitJS("the error", `!document.querySelector('#error').hidden && document.querySelector('#error').textContent.includes('line 3:')`)
	shot("error")

	runSQL(`CREATE STREAM web_clicks (user_id VARCHAR KEY, url VARCHAR, n INT)
  WITH (KAFKA_TOPIC='web_clicks', VALUE_FORMAT='JSON', PARTITIONS=1);
CREATE STREAM web_big AS SELECT user_id, url, n * 2 AS n2 FROM web_clicks WHERE n > 0 EMIT CHANGES;
DESCRIBE web_big;`)
	waitJS("the CSAS", `document.querySelector('#results').textContent.includes('Created query with ID')`)
	waitJS("DESCRIBE", `[...document.querySelectorAll('#results td')].some(td => td.textContent === 'USER_ID (key)')`)
	shot("created")

	// Records flow in the background until the test ends.
	var produced atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			stmt := fmt.Sprintf("INSERT INTO web_clicks (user_id, url, n) VALUES ('u%d', '/p%d', %d)", i%7, i, i)
			if _, err := testEngine.Execute(context.Background(), engine.NewSession(), stmt, discard{}); err != nil {
				t.Errorf("%s: %v", stmt, err)
				return
			}
			produced.Add(1)
		}
	}()
	defer func() { close(stop); <-done }()

	// The query is RUNNING and its throughput chart moves. The queries
	// tab is reached with the keyboard: Tab from the top, then Enter.
	evalString(ctx, t, `document.activeElement.blur(), window.getSelection().removeAllRanges(), ''`)
	for i := 0; ; i++ {
		if i == 8 {
			t.Fatal("Tab did not reach the Queries link")
		}
		run("pressing Tab", chromedp.KeyEvent(kb.Tab))
		if evalString(ctx, t, `document.activeElement.id`) == "tab-queries" {
			break
		}
	}
	run("pressing Enter", chromedp.KeyEvent(kb.Enter))
	waitJS("the queries tab", `location.hash === '#queries' && !document.querySelector('#queries').hidden`)
	waitJS("the query RUNNING", `[...document.querySelectorAll('[data-query] .badge')].some(b => b.textContent === 'RUNNING')`)
	waitJS("the chart moving", `(() => {
		const c = document.querySelector('[data-query] .charts');
		const now = document.querySelector('[data-query] .now');
		return c && +c.dataset.points >= 3 && c.querySelector('polyline.in') && now && !now.textContent.startsWith('0 in/s');
	})()`)
	shot("queries")

	// The topology is drawn.
	run("the topology", chromedp.Click(chromedp.CSS(`[data-query] [data-act=plan]`)))
	waitJS("the topology drawn", `document.querySelectorAll('svg.topology .vertex').length >= 5`)
	shot("topology")

	// A join, a window and a GROUP BY on another column: a repartition
	// topic between two sub-topologies, stores with changelogs. The
	// picture has no overlapping boxes.
	runSQL(`CREATE TABLE web_users (user_id VARCHAR PRIMARY KEY, region VARCHAR)
  WITH (KAFKA_TOPIC='web_users', VALUE_FORMAT='JSON', PARTITIONS=1);
CREATE STREAM web_enriched AS SELECT c.user_id AS user_id, u.region AS region, c.n AS n
  FROM web_clicks c JOIN web_users u ON c.user_id = u.user_id EMIT CHANGES;
CREATE TABLE web_regions AS SELECT region, COUNT(*) AS c FROM web_enriched
  WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY region EMIT CHANGES;`)
	waitJS("the join and window queries", `(document.querySelector('#results').textContent.match(/Created query with ID/g) || []).length === 2 || !document.querySelector('#error').hidden`)
	if msg := evalString(ctx, t, `document.querySelector('#error').hidden ? '' : document.querySelector('#error').textContent`); msg != "" {
		t.Fatalf("creating the join query: %s", msg)
	}
	run("the queries tab", chromedp.Navigate(testURL+"/#queries"))
	waitJS("the join query's card", `[...document.querySelectorAll('[data-query]')].some(c => c.textContent.includes('WEB_REGIONS'))`)
	for _, sink := range []string{"WEB_ENRICHED", "WEB_REGIONS"} {
		run("the topology of "+sink, chromedp.Click(chromedp.JSPath(`[...document.querySelectorAll('[data-query]')].find(c => c.querySelector('dd').textContent.startsWith('`+sink+` ')).querySelector('[data-act=plan]')`)))
	}
	waitJS("the join topology drawn", `[...document.querySelectorAll('svg.topology')].some(s => [...s.querySelectorAll('.vkind')].some(t => t.textContent === 'StreamTableJoin') && s.querySelector('.store'))`)
	waitJS("the window topology drawn", `[...document.querySelectorAll('svg.topology')].some(s => s.querySelectorAll('.subtopology').length >= 2 && s.querySelector('.repartition') && s.querySelector('.store'))`)
	overlaps := evalString(ctx, t, `(() => {
		const out = [];
		for (const svg of document.querySelectorAll('svg.topology')) {
			const rs = [...svg.querySelectorAll('.vertex rect')].map(r => r.getBBox());
			for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {
				const a = rs[i], b = rs[j];
				if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) out.push(i + '/' + j);
			}
		}
		return out.join(' ');
	})()`)
	if overlaps != "" {
		t.Errorf("topology boxes overlap: %s", overlaps)
	}
	shot("join-topology")

	// Two sub-topologies side by side (both sides of a join repartitioned,
	// as a stream-stream join on other columns would be): the layout
	// keeps their frames and boxes apart.
	layout, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const m = await import('/console/assets/graph.js');
		const n = (id, kind, inputs, extra = {}) => ({ id, name: kind.toUpperCase() + '-' + id, kind, detail: kind, inputs, stores: [], ...extra });
		const graph = { appId: 'x', stores: [{ name: 'L', kind: 'window', changelog: 'x-L-changelog' }, { name: 'R', kind: 'window', changelog: 'x-R-changelog' }],
			subTopologies: [
				{ id: 0, nodes: [n(0, 'Source', [], { readsTopic: 'left' }), n(1, 'Rekey', [0]), n(11, 'FlatMap', [0]), n(2, 'Repartition', [1, 11], { writesTopic: 'x-L-repartition', repartition: true })] },
				{ id: 1, nodes: [n(3, 'Source', [], { readsTopic: 'right' }), n(4, 'Filter', [3]), n(5, 'Rekey', [4]), n(6, 'Repartition', [5], { writesTopic: 'x-R-repartition', repartition: true })] },
				{ id: 2, nodes: [n(7, 'Source', [], { readsTopic: 'x-L-repartition', repartition: true }), n(8, 'Source', [], { readsTopic: 'x-R-repartition', repartition: true }),
					n(9, 'StreamStreamJoin', [7, 8], { stores: ['L', 'R'] }), n(10, 'Sink', [9], { writesTopic: 'out' })] },
			] };
		const g = m.build(graph);
		m.layout(g);
		const vs = [...g.vs.values()];
		const out = [];
		const hit = (a, b) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
		const box = (v) => ({ x1: v.x, y1: v.y, x2: v.x + 200, y2: v.y + 44 });
		for (let i = 0; i < vs.length; i++) for (let j = i + 1; j < vs.length; j++) if (hit(box(vs[i]), box(vs[j]))) out.push(vs[i].label + '/' + vs[j].label);
		const frames = new Map();
		for (const v of vs) {
			if (v.sub < 0) continue;
			const f = frames.get(v.sub) || { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
			const b = box(v);
			frames.set(v.sub, { x1: Math.min(f.x1, b.x1), y1: Math.min(f.y1, b.y1), x2: Math.max(f.x2, b.x2), y2: Math.max(f.y2, b.y2) });
		}
		const fs = [...frames.entries()];
		for (let i = 0; i < fs.length; i++) for (let j = i + 1; j < fs.length; j++) if (hit(fs[i][1], fs[j][1])) out.push('sub-topologies ' + fs[i][0] + '/' + fs[j][0]);
		const join = vs.find((v) => v.label === 'STREAMSTREAMJOIN-9');
		if (!(join.layer > vs.find((v) => v.label === 'x-L-repartition').layer)) out.push('the join is not below its repartition topic');
		return out.join(', ');
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("laying out a synthetic graph: %v", err)
	}
	if layout != "" {
		t.Errorf("the layout of two parallel sub-topologies overlaps: %s", layout)
	}

	// A bad record is counted and shows in the query's processing log.
	produceRaw(t, "web_clicks", "u1", "{not json")
	card := `[...document.querySelectorAll('[data-query]')].find(c => c.querySelector('dd').textContent.startsWith('WEB_BIG '))`
	waitJS("the bad record counted", card+`.querySelector('.now').textContent.includes(', 1 bad records')`)
	run("the processing log", chromedp.Click(chromedp.JSPath(card+`.querySelector('[data-act=log]')`)))
	waitJS("the processing log entry", card+`.querySelectorAll('.log-box tbody tr').length >= 1`)
	shot("processing-log")
	checkContrast(ctx, t, "queries")

	// A push query's rows move; Esc stops it.
	// SET applies to the statements after it: this one reads from the
	// beginning.
	runSQL("SET 'auto.offset.reset' = 'earliest';\nSELECT * FROM web_big EMIT CHANGES;")
	waitJS("the push query's first rows", `document.querySelectorAll('#results tbody tr').length >= 3`)
	if first := evalString(ctx, t, `document.querySelector('#results tbody tr td:nth-child(2)').textContent`); first != "/p1" {
		t.Errorf("the push query after SET 'auto.offset.reset'='earliest' began at %q, not /p1", first)
	}
	before := eval("counting rows", `document.querySelectorAll('#results tbody tr').length`)
	waitJS("more rows", fmt.Sprintf(`document.querySelectorAll('#results tbody tr').length > %d`, before+2))
	shot("push")
	checkContrast(ctx, t, "editor")
	run("pressing Esc", chromedp.Focus(chromedp.CSS("#sql")), chromedp.KeyEvent(kb.Escape))
	waitJS("the push query stopped", `document.querySelector('#run-status').textContent.startsWith('Stopped') && document.querySelector('#stop').disabled`)
	after := eval("counting rows", `document.querySelectorAll('#results tbody tr').length`)
	if after <= before {
		t.Errorf("push query rows did not move: %d then %d", before, after)
	}

	// The catalog lists the stream; its detail shows DESCRIBE EXTENDED.
	run("the catalog", chromedp.Navigate(testURL+"/#catalog"))
	waitJS("the stream listed", `document.querySelector('#sources').textContent.includes('WEB_CLICKS')`)
	run("the stream's detail", chromedp.Click(chromedp.CSS(`[data-source="WEB_CLICKS"]`)))
	waitJS("DESCRIBE EXTENDED", `document.querySelector('#source-detail').textContent.includes('kafka topic')`)
	run("printing the topic", chromedp.Click(chromedp.CSS(`#print`)))
	waitJS("PRINT lines", `document.querySelectorAll('#print-out .log div').length >= 2`)
	shot("catalog")
	checkContrast(ctx, t, "catalog")
	run("stop printing", chromedp.Click(chromedp.CSS(`#print-stop`)))

	// A pull query's result is a table.
	runSQL("INSERT INTO web_users (user_id, region) VALUES ('u1', 'emea');")
	waitJS("the insert", `document.querySelector('#run-status').textContent === 'Done.'`)
	for i := 0; ; i++ {
		runSQL("SELECT * FROM web_users WHERE user_id = 'u1';")
		waitJS("the pull query", `/^\d+ rows?\.$/.test(document.querySelector('#run-status').textContent) || !document.querySelector('#error').hidden`)
		if evalString(ctx, t, `[...document.querySelectorAll('#results td')].map(td => td.textContent).join(',')`) == "u1,emea" {
			break
		}
		if i == 50 {
			shot("failed")
			t.Fatal("the pull query never returned the inserted row")
		}
		time.Sleep(100 * time.Millisecond)
	}
	shot("pull")

	// A query whose output topic is deleted under it fails: its card says
	// FAILED, with the error.
	runSQL("CREATE STREAM web_fail AS SELECT user_id, n FROM web_clicks EMIT CHANGES;")
	failCard := `[...document.querySelectorAll('[data-query]')].find(c => c.querySelector('dd').textContent.startsWith('WEB_FAIL '))`
	run("the queries page", chromedp.Navigate(testURL+"/#queries"))
	waitJS("the card of the query to fail", failCard+` !== undefined`)
	deleteTopic(t, "WEB_FAIL")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const c = `+failCard+`;
		return c !== undefined && c.querySelector('.badge').textContent === 'FAILED' &&
			c.querySelector('.state-detail').textContent.includes('writing records failed');
	})()`, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		shot("failed")
		t.Fatalf("waiting for the query FAILED with its error: %v", err)
	}
	shot("failed-query")

	// A phone-width screen: nothing wider than the screen on any page.
	run("phone width", chromedp.EmulateViewport(390, 844))
	for _, page := range []string{"editor", "catalog", "queries"} {
		run("the "+page+" at phone width", chromedp.Navigate(testURL+"/#"+page))
		waitJS("the "+page+" at phone width", `!document.querySelector('#`+page+`').hidden && (location.hash !== '#queries' || document.querySelector('[data-query] .badge') !== null)`)
		if overflow := eval("checking overflow", `document.documentElement.scrollWidth - window.innerWidth`); overflow > 1 {
			t.Errorf("the %s page is %d px wider than a 390 px screen", page, overflow)
		}
		shot("phone-" + page)
	}
	run("desktop width", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(testURL+"/#queries"))

	// TERMINATE with confirmation.
	big := `[...document.querySelectorAll('[data-query]')].find(c => c.querySelector('dd').textContent.startsWith('WEB_BIG '))`
	waitJS("the query card", big+` !== undefined`)
	run("terminate", chromedp.Click(chromedp.JSPath(big+`.querySelector('[data-act=terminate]')`)))
	waitJS("the dialog", `document.querySelector('#confirm').open`)
	shot("confirm")
	run("confirming", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	waitJS("the query gone", big+` === undefined`)
	shot("terminated")
	if produced.Load() == 0 {
		t.Error("no records were produced")
	}
	for _, q := range testEngine.Queries() {
		if strings.Contains(q.SQL, "web_big") || q.Sink == "WEB_BIG" {
			t.Errorf("query %s still in the catalog after TERMINATE", q.ID)
		}
	}
}

func evalString(ctx context.Context, t *testing.T, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// checkContrast fails the test for visible text whose contrast with its
// background is below WCAG AA (4.5:1, 3:1 for large text).
func checkContrast(ctx context.Context, t *testing.T, page string) {
	t.Helper()
	bad := evalString(ctx, t, `(() => {
		const rgb = (c) => c.match(/[\d.]+/g).map(Number);
		const lum = (c) => {
			const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
			const [r, g, b] = rgb(c);
			return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
		};
		const bg = (el) => {
			for (; el; el = el.parentElement) {
				const m = rgb(getComputedStyle(el).backgroundColor);
				if (m.length < 4 || m[3] > 0.5) return getComputedStyle(el).backgroundColor;
			}
			return 'rgb(255, 255, 255)';
		};
		const out = [];
		for (const el of document.querySelectorAll('body *')) {
			if (el.closest('svg') || el.closest('[hidden]') || el.offsetParent === null || el.disabled) continue;
			if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
			const cs = getComputedStyle(el);
			if (rgb(cs.color).length === 4 && rgb(cs.color)[3] === 0) continue; // the editor's transparent textarea
			const a = lum(cs.color), b = lum(bg(el));
			const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
			const size = parseFloat(cs.fontSize), bold = +cs.fontWeight >= 700;
			if (ratio < (size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5)) {
				out.push(el.tagName + '.' + el.className + ' ' + ratio.toFixed(2) + ' "' + el.textContent.trim().slice(0, 30) + '"');
			}
		}
		return out.join('; ');
	})()`)
	if bad != "" {
		t.Errorf("%s: text below WCAG AA contrast: %s", page, bad)
	}
}

// produceRaw writes one record with these key and value bytes.
func produceRaw(t *testing.T, topic, key, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// deleteTopic deletes a topic of the test's broker.
func deleteTopic(t *testing.T, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", topic, err)
	}
}
