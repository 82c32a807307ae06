package pictures

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"seckill/tools/cmd/harness/testbed"
)

// harness pictures: the README's pictures, drawn from the machine-readable
// results the other subcommands write, never by hand:
//
//	docs/lock-matrix.svg    from tools/loadtest/results.json      (make loadtest-matrix)
//	docs/bench.svg          from tools/bench/results.json         (make bench)
//	docs/faults.svg         from tools/faults/results.json        (make faults)
//	docs/bench-cluster.svg  from tools/bench/results.json         (make bench, its Redis
//	                        Cluster block)
//	docs/lock-check.svg     from tools/lock-check/results.json    (make lock-check)
//	docs/fairness.svg       from tools/loadtest/fairness/results.json (make fairness)
//
//	make pictures                       (go -C tools run ./cmd/harness pictures)
//	go -C tools run ./cmd/harness pictures -check   exit 1 when a picture is out of date
//
// A picture whose results file does not exist, or holds nothing it draws
// (errNoPictureData: a bench run without the cluster block), is skipped
// (and must not exist either). TestPicturesUpToDate renders every picture
// in memory from the committed results and compares it with the committed
// file, so a results change without `make pictures` fails `make test`.

// picture is one SVG under docs/ and the results file it is drawn from.
type picture struct {
	Results string // relative to the repository root
	SVG     string // relative to the repository root
	Render  func(results []byte) ([]byte, error)
}

// pictures are the README's pictures.
var pictures = []picture{
	{Results: "tools/loadtest/results.json", SVG: "docs/lock-matrix.svg", Render: renderMatrixPicture},
	{Results: "tools/bench/results.json", SVG: "docs/bench.svg", Render: renderBenchPicture},
	{Results: "tools/faults/results.json", SVG: "docs/faults.svg", Render: renderFaultsPicture},
	{Results: "tools/bench/results.json", SVG: "docs/bench-cluster.svg", Render: RenderClusterPicture},
	{Results: "tools/lock-check/results.json", SVG: "docs/lock-check.svg", Render: renderLockCheckPicture},
	{Results: "tools/loadtest/fairness/results.json", SVG: "docs/fairness.svg", Render: renderFairnessPicture},
}

// drawReport decodes a results file's data (read from path) into a report
// R and draws it with svg. A report for which empty holds is the error
// "path: none".
func drawReport[R any](data []byte, path, none string, empty func(R) bool, svg func(R) []byte) ([]byte, error) {
	var rep R
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if empty(rep) {
		return nil, fmt.Errorf("%s: %s", path, none)
	}
	return svg(rep), nil
}

// render draws the picture from the results under root. ok is false when
// the results file does not exist or holds nothing the picture draws.
func (p picture) render(root string) (svg []byte, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(root, p.Results))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	svg, err = p.Render(data)
	if errors.Is(err, errNoPictureData) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return svg, true, nil
}

// stale says why the committed picture differs from a fresh rendering
// ("" when it is up to date).
func (p picture) stale(root string) (string, error) {
	want, ok, err := p.render(root)
	if err != nil {
		return "", err
	}
	got, err := os.ReadFile(filepath.Join(root, p.SVG))
	switch {
	case errors.Is(err, fs.ErrNotExist) && !ok:
		return "", nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s is missing (drawn from %s)", p.SVG, p.Results), nil
	case err != nil:
		return "", err
	case !ok:
		return fmt.Sprintf("%s exists but %s does not (or holds nothing it draws)", p.SVG, p.Results), nil
	case !bytes.Equal(got, want):
		return fmt.Sprintf("%s is out of date with %s", p.SVG, p.Results), nil
	}
	return "", nil
}

// Run is `harness pictures`: it redraws every picture, or with -check
// exits 1 when one is out of date.
func Run(args []string) int {
	fl := flag.NewFlagSet("pictures", flag.ContinueOnError)
	check := fl.Bool("check", false, "write nothing; exit 1 when a picture is out of date with its results")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "[pictures] "+format+"\n", a...) }
	root, err := testbed.ProjectRoot()
	if err != nil {
		logf("ERROR: %v", err)
		return 2
	}
	if *check {
		status := 0
		for _, p := range pictures {
			why, err := p.stale(root)
			if err != nil {
				logf("ERROR: %s: %v", p.SVG, err)
				return 2
			}
			if why != "" {
				logf("%s: run make pictures", why)
				status = 1
			}
		}
		return status
	}
	for _, p := range pictures {
		svg, ok, err := p.render(root)
		if err != nil {
			logf("ERROR: %s: %v", p.SVG, err)
			return 2
		}
		if !ok {
			logf("%s: skipped, no %s or nothing in it to draw", p.SVG, p.Results)
			continue
		}
		path := filepath.Join(root, p.SVG)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, svg) {
			logf("%s: up to date", p.SVG)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			logf("ERROR: %v", err)
			return 2
		}
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			logf("ERROR: %v", err)
			return 2
		}
		logf("wrote %s from %s (%d bytes)", p.SVG, p.Results, len(svg))
	}
	return 0
}
