package house

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixture is the tiny tree under testdata, measured without duplicates.
func fixture(t *testing.T) *Report {
	t.Helper()
	r, err := Measure("testdata/tree", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoot(t *testing.T) {
	got := fixture(t).Root
	want := Root{Entries: 11, VisibleEntries: 10, GoFiles: 1, GoLines: 13, TestFiles: 1, TestLines: 8}
	if got != want {
		t.Errorf("root: got %+v, want %+v", got, want)
	}
}

func TestAreas(t *testing.T) {
	r := fixture(t)
	want := Area{
		Name:            "product",
		Packages:        []string{".", "config", "e2e", "lua", "store"},
		Files:           9,
		Lines:           132,
		TestFiles:       4,
		TestLines:       39,
		Largest:         FileSize{"config/config.go", 40},
		LargestNonTest:  FileSize{"config/config.go", 40},
		MostMethods:     TypeSize{"store", "fake", 4},
		MostMethodsCode: TypeSize{"store", "Store", 3}, // the generated file's methods left out
		FilesOver:       []FileSize{},
		TypesOver:       []TypeSize{},
		Comments:        CommentStats{Sentences: 25, Words: 99, Mean: 99.0 / 25, Median: 4},
	}
	if !reflect.DeepEqual(r.Product, want) {
		t.Errorf("product:\n got %+v\nwant %+v", r.Product, want)
	}
	want = Area{
		Name:            "tooling",
		Packages:        []string{"cmd/tool", "kit"},
		Files:           2,
		Lines:           20,
		Largest:         FileSize{"kit/kit.go", 14},
		LargestNonTest:  FileSize{"kit/kit.go", 14},
		MostMethods:     TypeSize{"kit", "Kit", 3},
		MostMethodsCode: TypeSize{"kit", "Kit", 3},
		FilesOver:       []FileSize{},
		TypesOver:       []TypeSize{},
		Comments:        CommentStats{Sentences: 6, Words: 23, Mean: 23.0 / 6, Median: 4},
	}
	if !reflect.DeepEqual(r.Tooling, want) {
		t.Errorf("tooling:\n got %+v\nwant %+v", r.Tooling, want)
	}
}

// TestLimits adds files to a copy of the fixture: a test file of 601
// lines with a type of 26 methods, and a file of exactly 600 lines.
func TestLimits(t *testing.T) {
	dir := copyTree(t, "testdata/tree")
	var big strings.Builder
	big.WriteString("package store\n\ntype many struct{}\n\n")
	for i := range 26 {
		fmt.Fprintf(&big, "func (many) M%d() {}\n", i)
	}
	for strings.Count(big.String(), "\n") < 601 {
		big.WriteString("\n")
	}
	write(t, dir, "store/big_test.go", big.String())
	write(t, dir, "kit/flat.go", "package kit\n"+strings.Repeat("\n", 599))
	r, err := Measure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Product
	if p.Largest != (FileSize{"store/big_test.go", 601}) || p.LargestNonTest != (FileSize{"config/config.go", 40}) {
		t.Errorf("largest: got %v and %v", p.Largest, p.LargestNonTest)
	}
	if !reflect.DeepEqual(p.FilesOver, []FileSize{{"store/big_test.go", 601}}) {
		t.Errorf("files over 600: got %v", p.FilesOver)
	}
	if !reflect.DeepEqual(p.TypesOver, []TypeSize{{"store", "many", 26}}) || p.MostMethodsCode != (TypeSize{"store", "Store", 3}) {
		t.Errorf("types over 25: got %v, most methods without tests %v", p.TypesOver, p.MostMethodsCode)
	}
	if r.Tooling.Largest != (FileSize{"kit/flat.go", 600}) || len(r.Tooling.FilesOver) != 0 {
		t.Errorf("tooling: largest %v, over 600 %v", r.Tooling.Largest, r.Tooling.FilesOver)
	}
}

// TestGitTree counts only the files git tracks in a work tree's top.
func TestGitTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := copyTree(t, "testdata/tree")
	write(t, dir, "untracked.go", "package main\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"rm", "-q", "--cached", "untracked.go"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r, err := Measure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Root.Entries != 11 || r.Root.GoFiles != 1 {
		t.Errorf("root: got %+v, want 11 entries and 1 Go file", r.Root)
	}
}

func TestComments(t *testing.T) {
	r := fixture(t)
	// 31 sentences of 122 words; see TestSentencesOfFixture.
	want := CommentStats{Sentences: 31, Words: 122, Mean: 122.0 / 31, Median: 4}
	if r.Comments != want {
		t.Errorf("total: got %+v, want %+v", r.Comments, want)
	}
	var names []string
	for _, p := range r.Packages {
		names = append(names, fmt.Sprintf("%s:%d/%d", p.Package, p.Sentences, p.Words))
	}
	if got := strings.Join(names, " "); got != ".:4/18 cmd/tool:1/5 config:6/26 kit:5/18 lua:2/10 store:13/45" {
		t.Errorf("per package: got %s", got)
	}
}

func TestSentencesOfFixture(t *testing.T) {
	tr, err := listTree("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	gos, err := tr.goFiles()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, g := range gos {
		got[g.path] = fileSentences(g)
	}
	want := map[string][]string{
		// The directive and the trailing comment stand apart.
		"main.go": {"Command shop sells things.", "It reads main.go first, e.g. at start.", "sell one"},
		// The code line is left out; list items and blank lines part sentences.
		"store/store.go": {
			"Package store keeps the stock.", "Version 1.26.8 is fine!", "Is it?", "Items:",
			"- one item", "- two items", "Store holds the stock.", "New returns a store.",
			"Sell takes one unit.", "Left returns the units left.", "Add puts units back.",
		},
		"store/keys.go": {"the scripts", "buyKeys are the KEYS of lua/buy.lua."},
	}
	for path, w := range want {
		if !reflect.DeepEqual(got[path], w) {
			t.Errorf("%s:\n got %q\nwant %q", path, got[path], w)
		}
	}
	if _, ok := got["store/zz_gen.go"]; ok {
		t.Error("the generated file was read")
	}
}

func TestSplitSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"One. Two? Three! Four", []string{"One.", "Two?", "Three!", "Four"}},
		{"Read main.go, then go.mod. Done.", []string{"Read main.go, then go.mod.", "Done."}},
		{"Use e.g. this, i.e. that, etc. and so on.", []string{"Use e.g. this, i.e. that, etc. and so on."}},
		{"Go 1.26.8 runs. (It is new.) Next.", []string{"Go 1.26.8 runs.", "(It is new.)", "Next."}},
		{"A \"quoted.\" B", []string{"A \"quoted.\"", "B"}},
		{"... -- .", nil},
	} {
		if got := splitSentences(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStats(t *testing.T) {
	got := stats([]int{41, 40, 3, 12})
	want := CommentStats{Sentences: 4, Words: 96, Mean: 24, Median: 26, Over40: 1}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := stats([]int{5, 1, 9}); got.Median != 5 {
		t.Errorf("median of 3: got %v", got.Median)
	}
}

func TestSettings(t *testing.T) {
	got := fixture(t).Settings
	want := Settings{
		Variables: 3, MeanPlaces: 7.0 / 3, MaxPlaces: 3, MaxVar: "SECKILL_PORT", MeanLines: 4, MaxLines: 5,
		PerVar: []Setting{
			// The Config declaration and Load.
			{Name: "SECKILL_ADDR", Fields: []string{"Addr"}, Places: 2, Lines: 4},
			// Found by its field's name: Config, Load and Validate.
			{Name: "SECKILL_PORT", Fields: []string{"Port"}, Places: 3, Lines: 5},
			// Found by its doc and by the table row: Config and the table.
			{Name: "SECKILL_SHOP_MODE", Fields: []string{"Mode"}, Places: 2, Lines: 3},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// TestSettingsTable measures a config/ whose settings a table drives.
func TestSettingsTable(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "go.mod", "module example.com/table\n")
	write(t, dir, "config/config.go", `package config

// Config is the configuration.
type Config struct {
	Addr  string
	Level int `+"`env:\"SECKILL_LOG\"`"+`
	Duty  float64
}

type setting struct {
	Name    string
	Default string
	Field   func(c *Config) any
}

// settings drives parsing, defaults and help.
var settings = []setting{
	{Name: "SECKILL_ADDR", Default: ":80", Field: func(c *Config) any { return &c.Addr }},
	{Name: "SECKILL_CONSUMER_DUTY", Default: "1", Field: func(c *Config) any { return &c.Duty }},
}
`)
	r, err := Measure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{
		{Name: "SECKILL_ADDR", Fields: []string{"Addr"}, Places: 2, Lines: 2},
		{Name: "SECKILL_CONSUMER_DUTY", Fields: []string{"Duty"}, Places: 2, Lines: 2},
		{Name: "SECKILL_LOG", Fields: []string{"Level"}, Places: 1, Lines: 1},
	}
	if !reflect.DeepEqual(r.Settings.PerVar, want) || r.Settings.MaxPlaces != 2 {
		t.Errorf("got %+v\nwant %+v", r.Settings, want)
	}
}

func TestLuaKeys(t *testing.T) {
	got := fixture(t).LuaKeys
	// lua/wrk.lua mentions KEYS, but no Go file embeds it.
	want := LuaKeys{Scripts: 2, MeanPlaces: 1, MaxPlaces: 2, PerScript: []LuaScript{
		{Name: "buy.lua", Header: true, GoFiles: []string{"store/keys.go"}, Places: 2},
		{Name: "free.lua", GoFiles: []string{}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDuplicates(t *testing.T) {
	for _, c := range []struct {
		out  string
		want int
	}{
		{"159 pairs of places (399 files read), each sharing\nD1 a ~ b\n", 159},
		{"1 pair of places (2 files read)\n", 1},
		{"no duplicates (13 files read)\n", 0},
		{"usage: ...\n", -1},
	} {
		if got := parseDuplicates(c.out); got.Pairs != c.want {
			t.Errorf("%q: got %d, want %d", c.out, got.Pairs, c.want)
		}
	}
	if got := fixture(t).Duplicates; got.Pairs != -1 || got.String() != "n/a" {
		t.Errorf("without the command: got %+v", got)
	}
	// A stand-in command that answers 7 pairs for the folder it is given.
	dir := t.TempDir()
	cmd := filepath.Join(dir, "duplicates")
	write(t, dir, "duplicates", "#!/bin/sh\n[ \"$1 $2\" = \"--repo testdata/tree\" ] && echo '7 pairs of places (3 files read)'\n")
	if err := os.Chmod(cmd, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Measure("testdata/tree", Options{Duplicates: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if r.Duplicates.Pairs != 7 {
		t.Errorf("with the command: got %+v", r.Duplicates)
	}
}

func TestMainOutput(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-json", "testdata/tree"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Root.Entries != 11 {
		t.Fatalf("json: %v, root %+v", err, r.Root)
	}
	out.Reset()
	if code := run([]string{"-packages", "testdata/tree"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, line := range []string{
		"| root entries (visible) | 11 (10) |",
		"| product type with most methods | store.fake (4) |",
		"| tooling largest file | kit/kit.go (14) |",
		"| settings: places per variable, mean / max | 2.33 / 3 (SECKILL_PORT) |",
		"| Lua KEYS: places per script, mean / max | 1.00 / 2 |",
		"| comment words per sentence, mean / median | 3.9 / 4.0 |",
		"| store | 13 | 3.5 | 4.0 | 0 |",
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("markdown lacks %q:\n%s", line, out.String())
		}
	}
	if code := run([]string{"a", "b"}, &out, &errs); code != 2 {
		t.Errorf("two folders: exit %d, want 2", code)
	}
}

// copyTree copies a folder into a new temporary one.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		write(t, to, filepath.ToSlash(rel), string(src))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
