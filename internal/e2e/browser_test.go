package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// The console's tests drive Debian's chromium, headless, as a person
// would: they click what a person clicks and read what a person sees.
// Chromium is started with a fresh profile and every background service
// off (this machine, like CI's, has no internet).

// browserFlags are chromium's switches: headless, no sandbox (CI runs as
// root), nothing that talks to the network by itself.
var browserFlags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("headless", true),
	chromedp.NoSandbox,
	chromedp.DisableGPU,
	chromedp.Flag("disable-quic", true),
	chromedp.NoFirstRun,
	chromedp.NoDefaultBrowserCheck,
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-dev-shm-usage", true),
	chromedp.Flag("hide-scrollbars", true),
	chromedp.Flag("mute-audio", true),
	chromedp.WindowSize(1400, 1000),
}

// chromium is the browser's path; a machine without it skips the test,
// and CI (CI=true) fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "chromium is not installed (bash scripts/tools.sh chromium, or apt-get install chromium)")
	return ""
}

// newBrowser starts a headless chromium with a profile of its own and
// returns a tab's context; both end with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium(t)), chromedp.UserDataDir(t.TempDir())}, browserFlags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, and must have no deadline.
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// newTab opens another tab of ctx's browser.
func newTab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	// A tab lives as long as the context of its first run: no deadline.
	require.NoError(t, chromedp.Do(tab), "open a tab")
	return tab
}

// css is a CSS selector.
type css = chromedp.CSS

// do runs browser actions, bounded by browserWait, and fails the test with
// what the page showed when one fails.
//
// Each step runs on its own, and a step whose node the live script
// replaced between finding it and acting on it is tried again: that error
// comes before any input reaches the page, so nothing is done twice.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for _, step := range steps {
		run(t, ctx, retryGoneNode(step))
	}
}

// retryGoneNode is step, tried again while its node went away under it.
func retryGoneNode(step chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for tries := 1; ; tries++ {
			v, err := step(ctx, tg)
			if err == nil || tries == 5 || !strings.Contains(err.Error(), "No node with given id") {
				return v, err
			}
			select {
			case <-ctx.Done():
				return v, err
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// browserWait bounds one browser action: a page of the console answers
// in well under a second, so an action that takes minutes is stuck.
const browserWait = 2 * time.Minute

// run runs one browser action and returns its value, as do.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		body, _ := chromedp.Run(qctx, chromedp.Text(css("body")))
		t.Fatalf("browser: %v\npage text:\n%s", err, body)
	}
	return v
}

// eval is the value of a JavaScript expression on the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[T](expr))
}

// shown is what the page shows in the first element sel matches, read
// in one evaluation: the live script swaps a page's regions for fresh
// copies, and a form's submit replaces the document, so a node found by
// one DevTools call may be gone by the next ("No node with given id").
type shown struct {
	Found bool   `json:"found"`
	Text  string `json:"text"`
	Ready bool   `json:"ready"`
}

// readShown reads sel once; an error is a page between documents.
func readShown(ctx context.Context, sel string) (shown, error) {
	q, _ := json.Marshal(sel)
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		const ready = document.readyState === "complete";
		if (!el || el.getClientRects().length === 0) return {found: false, text: "", ready};
		return {found: true, text: el.innerText, ready};
	})()`, q)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(qctx, chromedp.Evaluate[shown](js))
}

// text is the visible text of the first element sel matches, once the
// page has loaded and the element is shown.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for time.Now().Before(deadline) {
		if s, err := readShown(ctx, sel); err == nil && s.Found && s.Ready {
			return s.Text
		}
		time.Sleep(100 * time.Millisecond)
	}
	body, _ := readShown(ctx, "body")
	t.Fatalf("browser: %s is not shown; the page:\n%s", sel, body.Text)
	return ""
}

// waitText waits until the element sel matches shows want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	var s string
	for time.Now().Before(deadline) {
		if got, err := readShown(ctx, sel); err == nil && got.Found {
			s = got.Text
			if strings.Contains(s, want) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	body, _ := readShown(ctx, "body")
	t.Fatalf("browser: %s never showed %q; it shows %q; the page:\n%s", sel, want, s, body.Text)
}

// waitLocation waits until the page's address holds want and its document
// has loaded: a click that submits a form is done only then.
func waitLocation(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	var at string
	for time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := chromedp.Run(qctx, chromedp.Evaluate[[]string](`[location.href, document.readyState]`))
		cancel()
		if err == nil && len(got) == 2 {
			at = got[0]
			if strings.Contains(at, want) && got[1] == "complete" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("browser: the page never went to an address with %q; it is at %s", want, at)
}

// screenshot saves the page as NAME.png in the directory
// TETHER_SCREENSHOTS names, when it is set (make screenshots); a relative
// directory is taken from the repository's root, not the test's.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("TETHER_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(testenv.Root(), dir)
	}
	png := run(t, ctx, chromedp.FullScreenshot(100))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name+".png"))
}

// tetherBin is the tether CLI the tests run as a process.
var tetherBin = buildOnce("tether", "starter")

// consoleProc is a `tether console` the test started.
type consoleProc struct {
	URL string
	out *testenv.SyncBuffer
	pid int
}

// peakRSS is the most memory the console process has held (VmHWM).
func (c *consoleProc) peakRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", c.pid)
	return 0
}

var consoleAddr = regexp.MustCompile(`console: (http://\S+)/ `)

// startConsole runs `tether console` against the harness's dev server
// and store (a process of its own, as a person starts it), with args and
// env added, and returns its address once it listens.
func startConsole(t testing.TB, h *harness, env []string, args ...string) *consoleProc {
	t.Helper()
	bin, err := tetherBin()
	require.NoError(t, err, "build tether")
	cmd := exec.Command(bin, append([]string{"console", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+h.srv.Address, "TETHER_BLOB_URL="+h.blobURL, "TETHER_CONSOLE_TOKEN=")
	cmd.Env = append(cmd.Env, env...)
	out := &testenv.SyncBuffer{}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if m := consoleAddr.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1]
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		require.True(t, ok, "tether console exited: %s", out.String())
		return &consoleProc{URL: u, out: out, pid: cmd.Process.Pid}
	case <-time.After(time.Minute):
		t.Fatalf("tether console did not say where it listens: %s", out.String())
	}
	return nil
}
