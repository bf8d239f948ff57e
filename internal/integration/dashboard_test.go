package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardInBrowser loads the dashboard of a semi-sync primary with a
// Lockstep replica in headless Chromium while a writer runs, and checks
// that the page draws its charts with data from the server, shows the
// topology, and logs no console errors or exceptions. With
// LOCKSTEP_DASHBOARD_SCREENSHOT=dir it saves both servers' pages as PNGs
// (docs/ keeps such screenshots).
func TestDashboardInBrowser(t *testing.T) {
	chromium := needTool(t, "chromium")
	p := startServer(t, t.TempDir(), "--rpl-semi-sync-source-enabled=ON")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--rpl-semi-sync-replica-enabled=ON", "--replica-parallel-workers=4")
	db := p.db("")
	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	for i := range 64 {
		mustExec(t, db, "INSERT INTO d.t VALUES (?, 0)", i)
	}

	// A steady writer: 4 connections updating rows, until the test ends.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				db.Exec("UPDATE d.t SET v = v + 1 WHERE id = ?", (w*16+i)%64)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1300),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()

	for _, s := range []struct {
		name    string
		srv     *server
		charts  []string // charts that must show
		data    []string // of those, charts whose lines must rise above 0
		topoSel string   // an element the topology must fill
	}{
		{"primary", p, []string{"commits", "groupsize", "fsync", "statements", "replicas", "replicas_lag", "semisync", "locks", "cpu"},
			[]string{"commits", "groupsize", "fsync", "statements", "semisync", "cpu"}, "#replica-nodes .node"},
		{"replica", r, []string{"commits", "replica_rate", "replica_lag", "replica_queue", "cpu"},
			[]string{"commits", "replica_rate", "cpu"}, "#source-node:not([hidden])"},
	} {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(actx)
			defer cancel()
			if err := chromedp.Do(ctx); err != nil { // starts the browser, without a timeout
				t.Fatalf("starting chromium: %v", err)
			}
			var mu sync.Mutex
			var problems []string
			messages := chromedp.Console(ctx)
			go func() {
				for m, err := range messages {
					if err != nil {
						return
					}
					switch m.Type {
					case chromedp.ConsoleWarning, chromedp.ConsoleError, chromedp.ConsoleException:
						mu.Lock()
						problems = append(problems, m.String())
						mu.Unlock()
					}
				}
			}()
			tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
			defer tcancel()

			url := fmt.Sprintf("http://127.0.0.1:%d/", s.srv.httpPort)
			if err := chromedp.Do(tctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
				t.Fatalf("page did not become ready: %v", err)
			}

			// Every expected chart must be drawn, and those in s.data with
			// a line above zero in the server's series: wait for both.
			deadline := time.Now().Add(30 * time.Second)
			for _, id := range s.charts {
				for {
					js := fmt.Sprintf(`(() => { const s = document.querySelector('#charts [data-id=%q] svg');
						return !!s && s.querySelectorAll('path').length > 3; })()`, id)
					drawn, err := chromedp.Run(tctx, chromedp.Evaluate[bool](js))
					if err != nil {
						t.Fatal(err)
					}
					if drawn && (!slices.Contains(s.data, id) || chartHasData(t, s.srv, id)) {
						break
					}
					if time.Now().After(deadline) {
						shown, _ := chromedp.Run(tctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#charts .chart')].map(d => d.dataset.id)`))
						t.Fatalf("chart %s not drawn with data (charts on the page: %v)", id, shown)
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, s.topoSel))); err != nil || n == 0 {
				t.Fatalf("topology element %s missing (%d, %v)", s.topoSel, n, err)
			}
			headline, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector('#headline .figure b').textContent`))
			if err != nil {
				t.Fatal(err)
			}
			if headline == "" || headline == "–" {
				t.Fatalf("commits/s headline is %q", headline)
			}

			if dir := os.Getenv("LOCKSTEP_DASHBOARD_SCREENSHOT"); dir != "" {
				time.Sleep(2 * time.Second)
				png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(fmt.Sprintf("%s/dashboard-%s.png", dir, s.name), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(problems) > 0 {
				t.Fatalf("the page logged problems:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}

// chartHasData reports whether a chart's server-side series have a point
// above zero.
func chartHasData(t *testing.T, s *server, id string) bool {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/dashboard/chart/%s.json", s.httpPort, id))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []struct {
		Points []struct{ Y float64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&lines); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		for _, p := range l.Points {
			if p.Y > 0 {
				return true
			}
		}
	}
	return false
}
