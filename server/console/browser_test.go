package console_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sqlstreams/sqlstreams/engine"
)

// chromium returns the path of a Chromium or Chrome binary, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := osexec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestConsoleInBrowser drives the console in headless Chromium against a
// real server (embedded broker, engine, REST server): it creates a stream
// and a CSAS from the editor with Ctrl-Enter, sees the query RUNNING,
// produces records and sees the throughput chart and a push query's rows
// move, stops the push query with Esc, shows an error at its line:column,
// draws the topology, and TERMINATEs the query through the confirmation
// dialog. Screenshots go to the test's temp dir (or $CONSOLE_SCREENSHOTS).
func TestConsoleInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("Chromium is not installed (apt-get install chromium; scripts/deps.sh installs it for scripts/test): the console's browser test cannot run")
	}
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
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	step := 0
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		step++
		if err := os.WriteFile(filepath.Join(shots, fmt.Sprintf("%02d-%s.jpg", step, name)), buf, 0o644); err != nil {
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

	// A statement error is shown at its line:column in the editor.
	runSQL("SHOW STREAMS;\nSELECT * FROM\n  no_such_stream EMIT CHANGES;")
	waitJS("the error", `!document.querySelector('#error').hidden && document.querySelector('#error').textContent.includes('line 3:')`)
	shot("error")

	runSQL(`CREATE STREAM web_clicks (user_id VARCHAR KEY, url VARCHAR, n INT)
  WITH (KAFKA_TOPIC='web_clicks', VALUE_FORMAT='JSON', PARTITIONS=1);
CREATE STREAM web_big AS SELECT user_id, url, n * 2 AS n2 FROM web_clicks WHERE n > 0 EMIT CHANGES;`)
	waitJS("the CSAS", `document.querySelector('#results').textContent.includes('Created query with ID')`)
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

	// The query is RUNNING and its throughput chart moves.
	run("the queries tab", chromedp.Navigate(testURL+"/#queries"))
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

	// A push query's rows move; Esc stops it.
	runSQL("SELECT * FROM web_big EMIT CHANGES;")
	waitJS("the push query's first rows", `document.querySelectorAll('#results tbody tr').length >= 3`)
	before := eval("counting rows", `document.querySelectorAll('#results tbody tr').length`)
	waitJS("more rows", fmt.Sprintf(`document.querySelectorAll('#results tbody tr').length > %d`, before+2))
	shot("push")
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
	run("stop printing", chromedp.Click(chromedp.CSS(`#print-stop`)))

	// A phone-width screen: nothing wider than the screen.
	run("phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(testURL+"/#queries"))
	waitJS("the queries at phone width", `document.querySelector('[data-query] .badge') !== null`)
	overflow := eval("checking overflow", `document.documentElement.scrollWidth - window.innerWidth`)
	shot("phone")
	if overflow > 1 {
		t.Errorf("the queries page is wider than a 390 px screen")
	}
	run("desktop width", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(testURL+"/#queries"))

	// TERMINATE with confirmation.
	waitJS("the query card", `document.querySelector('[data-query] [data-act=terminate]') !== null`)
	run("terminate", chromedp.Click(chromedp.CSS(`[data-query] [data-act=terminate]`)))
	waitJS("the dialog", `document.querySelector('#confirm').open`)
	shot("confirm")
	run("confirming", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	waitJS("the query gone", `document.querySelector('#query-list').textContent.includes('No persistent queries')`)
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
