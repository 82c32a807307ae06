package browsertest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>t</title></head>
<body>
<input id="name"><button id="go">go</button>
<p id="out"></p>
<script>
document.getElementById("go").addEventListener("click", () => {
  const v = document.getElementById("name").value;
  console.log("clicked with " + v);
  setTimeout(() => { document.getElementById("out").textContent = "你好，" + v; }, 100);
});
window.later = () => new Promise(r => setTimeout(() => r(42), 50));
</script>
</body></html>`

func server(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("/next", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<p id="out">next page</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserSteps: the steps the page tests use, against a small page.
func TestBrowserSteps(t *testing.T) {
	t.Setenv("SECKILL_TEST_BROWSER_ARTIFACTS", t.TempDir())
	srv := server(t)
	b := New(t)
	b.Navigate(srv.URL + "/")
	b.SetValue("#name", "世界")
	b.Click("#go")
	if got := b.WaitText("#out", "你好"); got != "你好，世界" {
		t.Errorf("text: got %q, want 你好，世界", got)
	}
	if got := b.Text("#out"); got != "你好，世界" {
		t.Errorf("Text: got %q", got)
	}
	if got := Eval[int](b, `window.later()`); got != 42 {
		t.Errorf("Eval of a promise: got %d, want 42", got)
	}
	if got := strings.Join(b.Console(), "\n"); !strings.Contains(got, "clicked with 世界") {
		t.Errorf("console: got %q, want the page's log", got)
	}
	Eval[bool](b, `(setTimeout(() => { location.href = "/next"; }, 100), true)`)
	if got := b.WaitURL(`/next$`); !strings.HasSuffix(got, "/next") {
		t.Errorf("WaitURL: got %q", got)
	}
	b.WaitText("#out", "next page")
	p := b.Screenshot("steps")
	data, err := os.ReadFile(p)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Errorf("screenshot %s: got %d bytes (%v), want a PNG", p, len(data), err)
	}
}

// fatalTB records Fatalf instead of ending the test, so that a failing
// step can be observed.
type fatalTB struct {
	testing.TB
	fatal string
}

type fatalled struct{}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(fatalled{})
}

// TestFailedStepSavesArtifacts: a step that times out fails the test with
// the step's name and leaves a screenshot, the HTML and the console in the
// artifact directory.
func TestFailedStepSavesArtifacts(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SECKILL_TEST_BROWSER_ARTIFACTS", dir)
	srv := server(t)
	failing := &fatalTB{TB: t}
	b := New(failing, Options{StepTimeout: 500 * time.Millisecond})
	b.Navigate(srv.URL + "/")
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalled); !ok {
					panic(r)
				}
			}
		}()
		b.WaitText("#out", "never shown")
	}()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("failed step took %v, want about the step timeout", took)
	}
	if !strings.Contains(failing.fatal, "text of #out to contain") || !strings.Contains(failing.fatal, "never shown") {
		t.Errorf("failure: got %q, want it to name the step", failing.fatal)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range files {
		kinds = append(kinds, filepath.Base(f))
	}
	for _, suffix := range []string{".png", ".html", ".console.txt"} {
		found := false
		for _, k := range kinds {
			found = found || strings.HasSuffix(k, suffix)
		}
		if !found {
			t.Errorf("artifacts %v: want a %s file", kinds, suffix)
		}
	}
}

func TestChromiumFromEnv(t *testing.T) {
	t.Setenv("SECKILL_CHROMIUM", filepath.Join(t.TempDir(), "missing"))
	if _, err := Chromium(); err == nil || !strings.Contains(err.Error(), "SECKILL_CHROMIUM") {
		t.Errorf("missing SECKILL_CHROMIUM: got %v, want an error naming it", err)
	}
}
