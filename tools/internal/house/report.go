package house

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Duplicates is the pair count of the duplicates command.
type Duplicates struct {
	Pairs     int    `json:"pairs"` // -1 when not measured
	FirstLine string `json:"first_line"`
}

func (d Duplicates) String() string {
	if d.Pairs < 0 {
		return "n/a"
	}
	return strconv.Itoa(d.Pairs)
}

// pairsLine matches the count on the first line of duplicates' answer.
var pairsLine = regexp.MustCompile(`^(\d+) pairs? `)

// parseDuplicates reads the pair count from duplicates' first line.
func parseDuplicates(out string) Duplicates {
	first, _, _ := strings.Cut(out, "\n")
	d := Duplicates{Pairs: -1, FirstLine: first}
	if m := pairsLine.FindStringSubmatch(first); m != nil {
		d.Pairs, _ = strconv.Atoi(m[1])
	} else if strings.HasPrefix(first, "no duplicates") {
		d.Pairs = 0
	}
	return d
}

// runDuplicates runs the duplicates command on dir; an empty command, or
// one that fails, leaves the measure n/a.
func runDuplicates(command, dir string) Duplicates {
	if command == "" {
		return Duplicates{Pairs: -1}
	}
	out, err := exec.Command(command, "--repo", dir, "--most", "1", "--seconds", "300").Output()
	if err != nil {
		return Duplicates{Pairs: -1, FirstLine: err.Error()}
	}
	return parseDuplicates(string(out))
}

// Main is the `harness house [-json] [DIR]` subcommand; it returns the exit
// status.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("house", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of markdown")
	packages := fs.Bool("packages", false, "add the comment measure of each package")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: harness house [-json] [-packages] [DIR] (DIR defaults to .)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	var opt Options
	if p, err := exec.LookPath("duplicates"); err == nil {
		opt.Duplicates = p
	}
	r, err := Measure(dir, opt)
	if err != nil {
		fmt.Fprintln(stderr, "house:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, "house:", err)
			return 1
		}
		return 0
	}
	r.Markdown(stdout, *packages)
	return 0
}

// Markdown writes the report as a table, and with packages one more table
// of the comment measure per package.
func (r *Report) Markdown(w io.Writer, packages bool) {
	row := func(name string, value any) { fmt.Fprintf(w, "| %s | %v |\n", name, value) }
	fmt.Fprintln(w, "| measure | value |")
	fmt.Fprintln(w, "| --- | --- |")
	row("root entries (visible)", fmt.Sprintf("%d (%d)", r.Root.Entries, r.Root.VisibleEntries))
	row("root Go files, lines", fmt.Sprintf("%d, %d", r.Root.GoFiles, r.Root.GoLines))
	row("root test files, lines", fmt.Sprintf("%d, %d", r.Root.TestFiles, r.Root.TestLines))
	for _, a := range []Area{r.Product, r.Tooling} {
		row(a.Name+" packages", len(a.Packages))
		row(a.Name+" files, lines", fmt.Sprintf("%d, %d", a.Files, a.Lines))
		row(a.Name+" test files, lines", fmt.Sprintf("%d, %d", a.TestFiles, a.TestLines))
		row(a.Name+" largest file", a.Largest)
		row(a.Name+" largest non-test file", a.LargestNonTest)
		row(a.Name+" type with most methods", a.MostMethods)
		row(a.Name+" type with most methods, non-test", a.MostMethodsCode)
		row(a.Name+" files over 600 lines", len(a.FilesOver))
		row(a.Name+" types over 25 methods", len(a.TypesOver))
		row(a.Name+" comment words per sentence, mean / past 40", fmt.Sprintf("%.1f / %d", a.Comments.Mean, a.Comments.Over40))
	}
	s := r.Settings
	row("settings (SECKILL_* in config/)", s.Variables)
	row("settings: places per variable, mean / max", fmt.Sprintf("%.2f / %d (%s)", s.MeanPlaces, s.MaxPlaces, s.MaxVar))
	row("settings: lines per variable, mean / max", fmt.Sprintf("%.2f / %d", s.MeanLines, s.MaxLines))
	k := r.LuaKeys
	row("Lua scripts", k.Scripts)
	row("Lua KEYS: places per script, mean / max", fmt.Sprintf("%.2f / %d", k.MeanPlaces, k.MaxPlaces))
	c := r.Comments
	row("comment sentences", c.Sentences)
	row("comment words per sentence, mean / median", fmt.Sprintf("%.1f / %.1f", c.Mean, c.Median))
	row("comment sentences past 40 words", c.Over40)
	row("duplicates pairs", r.Duplicates)
	if !packages {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| package | sentences | mean | median | past 40 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, p := range r.Packages {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %d |\n", p.Package, p.Sentences, p.Mean, p.Median, p.Over40)
	}
}
