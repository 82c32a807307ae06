// Package browsertest drives a headless Chromium from Go tests (chromedp).
// It finds the browser and starts it with bounded timeouts (as root with
// --no-sandbox). It runs steps, each under its own deadline. When a test
// fails, it saves a screenshot, the page's HTML and its console, and logs
// their paths. They go to testdata/browser-failures/<Test>/ in the package
// directory, or to $SECKILL_TEST_BROWSER_ARTIFACTS.
//
// Without a Chromium the test is skipped, unless CI=true: there a missing
// browser is a failure (.ci/services.sh installs Debian's chromium).
//
//	b := browsertest.New(t)
//	b.Navigate(srv.URL + "/login.html")
//	b.SetValue("#phone", "13800000001")
//	b.Click("#send-code")
//	b.WaitText("#message", "验证码")
//	id := browsertest.Eval[string](b, `sessionStorage.getItem("token")`)
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Options bound a browser's life. Zero fields take the defaults below.
type Options struct {
	// StartTimeout bounds the browser's start (default 30s).
	StartTimeout time.Duration
	// StepTimeout bounds each step: a navigation, a click, a wait
	// (default 15s).
	StepTimeout time.Duration
	// Lifetime bounds everything the browser does for the test (default
	// 3m). The browser is killed when it ends.
	Lifetime time.Duration
	// Width and Height are the window's and the viewport's size (default
	// 1280x900). Any width works, a phone's 390 too.
	Width, Height int
}

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStepTimeout  = 15 * time.Second
	DefaultLifetime     = 3 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Width <= 0 || o.Height <= 0 {
		o.Width, o.Height = 1280, 900
	}
	return o
}

// candidates are the names of a Chromium or Chrome binary, in order.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell", "chrome"}

// ErrNoChromium means no Chromium binary was found.
var ErrNoChromium = errors.New("browsertest: no Chromium found (install Debian's chromium, or set SECKILL_CHROMIUM to the binary)")

// Chromium returns the path of the browser: $SECKILL_CHROMIUM when set,
// else the first of chromium, chromium-browser, google-chrome, ... on PATH.
func Chromium() (string, error) {
	if p := os.Getenv("SECKILL_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("browsertest: SECKILL_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Browser is one headless Chromium with one tab, for one test. Its methods
// fail the test (t.Fatalf) when a step fails or times out, after saving
// what the page showed; call them from the test's goroutine.
type Browser struct {
	t    testing.TB
	opts Options
	ctx  context.Context // the tab's chromedp context

	mu       sync.Mutex
	console  []string
	saved    int
	done     bool
	dir      string
	chromeIO *bytes.Buffer
}

// New starts a headless Chromium for t with one blank tab, stopped (and its
// profile removed) when the test ends. Without a Chromium it skips t, or
// fails it when CI=true.
func New(t testing.TB, opts ...Options) *Browser {
	t.Helper()
	path, err := Chromium()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v; CI=true: a browser is required here", err)
		}
		t.Skip(err.Error())
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o = o.withDefaults()
	b := &Browser{t: t, opts: o, chromeIO: &bytes.Buffer{}}

	flags := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("lang", "zh-CN"),
		chromedp.CombinedOutput(lockedWriter{&b.mu, b.chromeIO}),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root.
		flags = append(flags, chromedp.NoSandbox)
	}
	life, stopLife := context.WithTimeout(context.Background(), o.Lifetime)
	alloc, stopAlloc := chromedp.NewExecAllocator(life, flags...)
	tab, stopTab := chromedp.NewContext(alloc, chromedp.WithErrorf(b.logf))
	b.ctx = tab

	t.Cleanup(func() {
		if t.Failed() {
			b.SaveArtifacts("at-end")
		}
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
		// Close the browser gracefully, then make sure the process is gone.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			if err := chromedp.Cancel(tab); err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("browsertest: closing the browser: %v", err)
			}
		}()
		select {
		case <-closed:
		case <-cctx.Done():
		}
		stopTab()
		stopAlloc()
		stopLife()
	})

	// Start it (the first action starts the browser and opens the tab),
	// bounded by StartTimeout, and collect the console from then on.
	started := make(chan error, 1)
	// The viewport is emulated too: a headless window is never narrower
	// than 500 px, and a phone's width is 390.
	go func() {
		started <- chromedp.Do(tab, chromedp.Navigate("about:blank"),
			chromedp.EmulateViewport(int64(o.Width), int64(o.Height)))
	}()
	select {
	case err = <-started:
	case <-time.After(o.StartTimeout):
		err = fmt.Errorf("no answer within %v", o.StartTimeout)
	}
	if err != nil {
		stopAlloc()
		b.mu.Lock()
		out := b.chromeIO.String()
		b.mu.Unlock()
		t.Fatalf("browsertest: starting %s: %v\nbrowser output:\n%s", path, err, tail(out, 4096))
	}
	b.collectConsole()
	return b
}

// lockedWriter serializes the browser's output into a buffer.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 1<<20 {
		return len(p), nil // keep the first MiB
	}
	return l.w.Write(p)
}

// logf logs chromedp's errors while the test runs.
func (b *Browser) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.t.Logf("chromedp: "+format, args...)
	}
}

// collectConsole keeps every console message and uncaught exception of
// the tab (shown with the artifacts of a failure).
func (b *Browser) collectConsole() {
	messages := chromedp.Console(b.ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			if len(b.console) < 1000 {
				b.console = append(b.console, m.String())
			}
			b.mu.Unlock()
		}
	}()
}

// Context returns the tab's chromedp context, for actions this package has
// no method for. Bound each use yourself (context.WithTimeout).
func (b *Browser) Context() context.Context { return b.ctx }

// Console returns the console messages and uncaught exceptions so far.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// Do runs actions as one step named name, bounded by the step timeout. On
// an error it saves the page's artifacts and fails the test.
func (b *Browser) Do(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(name, err)
	}
}

// Navigate opens url and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.Do("navigate to "+url, chromedp.Navigate(url))
}

// Click clicks the first element matching the CSS selector, once visible.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	b.Do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// SetValue sets the value of the input matching the CSS selector and fires
// its input and change events (as typing would for frameworks listening to
// them).
func (b *Browser) SetValue(sel, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el) return false;
		el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})()`, jsString(sel), jsString(value))
	b.WaitFor("set "+sel, func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	})
}

// Text returns the text content of the first element matching the CSS
// selector ("" when none).
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent`, jsString(sel)))
}

// WaitText waits until the text of the first element matching the CSS
// selector contains want, and returns that text.
func (b *Browser) WaitText(sel, want string) string {
	b.t.Helper()
	var got string
	js := fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent`, jsString(sel))
	b.WaitFor(fmt.Sprintf("text of %s to contain %q", sel, want), func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		got = s
		return err == nil && strings.Contains(s, want), err
	})
	return got
}

// WaitURL waits until the page's URL matches the regular expression, and
// returns it. Navigations are welcome while it waits.
func (b *Browser) WaitURL(pattern string) string {
	b.t.Helper()
	re := regexp.MustCompile(pattern)
	var got string
	b.WaitFor("URL to match "+pattern, func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Location())
		got = s
		return err == nil && re.MatchString(s), err
	})
	return got
}

// WaitFor polls cond every 50ms until it reports true, within the step
// timeout. Errors of single polls (a page navigating away, say) are
// retried. The last one is reported if the step times out.
func (b *Browser) WaitFor(name string, cond func(ctx context.Context) (bool, error)) {
	b.t.Helper()
	deadline := time.Now().Add(b.opts.StepTimeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := cond(ctx)
		cancel()
		if ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		if b.ctx.Err() != nil {
			b.fail(name, fmt.Errorf("browser gone: %w", b.ctx.Err()))
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				b.fail(name, fmt.Errorf("not within %v (last error: %v)", b.opts.StepTimeout, lastErr))
			}
			b.fail(name, fmt.Errorf("not within %v", b.opts.StepTimeout))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into T, failing the test on an error.
func Eval[T any](b *Browser, expression string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluate "+shorten(expression, 80), err)
	}
	return v
}

// Screenshot saves a PNG of the whole page as <name>.png in the artifact
// directory and returns its path (logged). It does not fail the test.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("browsertest: screenshot %s: %v", name, err)
		return ""
	}
	return b.write(name+".png", png)
}

// SaveArtifacts saves a screenshot, the page's HTML and URL, the console and
// the browser's own output, and logs where. The files go under the artifact
// directory, prefixed with a counter and label.
func (b *Browser) SaveArtifacts(label string) {
	b.t.Helper()
	b.mu.Lock()
	b.saved++
	prefix := fmt.Sprintf("%02d-%s", b.saved, sanitize(label))
	console := strings.Join(b.console, "\n")
	chrome := b.chromeIO.String()
	b.mu.Unlock()
	b.Screenshot(prefix)
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	var page strings.Builder
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		fmt.Fprintf(&page, "<!-- %s -->\n", loc)
	}
	if html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html"))); err == nil {
		page.WriteString(html)
	}
	b.write(prefix+".html", []byte(page.String()))
	b.write(prefix+".console.txt", []byte(console+"\n"))
	b.write(prefix+".chromium.txt", []byte(tail(chrome, 64<<10)))
}

// fail saves the artifacts of a failed step and fails the test.
func (b *Browser) fail(step string, err error) {
	b.t.Helper()
	b.SaveArtifacts("failed-" + step)
	b.t.Fatalf("browser step %q: %v\nconsole:\n%s", step, err, strings.Join(b.Console(), "\n"))
}

// ArtifactDir is where a test's browser artifacts go:
// $SECKILL_TEST_BROWSER_ARTIFACTS/<Test>, else testdata/browser-failures/<Test>
// in the package's directory (git-ignored), else the temporary directory.
func ArtifactDir(t testing.TB) string {
	base := os.Getenv("SECKILL_TEST_BROWSER_ARTIFACTS")
	if base == "" {
		base = filepath.Join("testdata", "browser-failures")
	}
	dir := filepath.Join(base, sanitize(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		dir = filepath.Join(os.TempDir(), "seckill-browser-failures", sanitize(t.Name()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return os.TempDir()
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}

func (b *Browser) write(name string, data []byte) string {
	b.mu.Lock()
	if b.dir == "" {
		b.dir = ArtifactDir(b.t)
	}
	dir := b.dir
	b.mu.Unlock()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.t.Logf("browsertest: %v", err)
		return ""
	}
	b.t.Logf("browsertest: saved %s", p)
	return p
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(s string) string {
	return shorten(strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "_"), 80)
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}
