// Package house measures how readable the source tree is.
// The figures let a change to the layout show its effect.
// Measure returns a Report; Main is the `harness house` subcommand.
// docs/house.md holds the definitions in full, with the figures.
//
// Files: the files git tracks in a work tree's top, else every file.
// Go files skip testdata, vendor, dot and underscore folders.
// Generated files ("Code generated ... DO NOT EDIT.") do not count.
// Lines are counted as wc -l counts them.
//
// Root: the names in the top folder, and its *_test.go files and lines.
//
// Areas: the product is what the root package imports, transitively.
// Packages holding only tests, outside cmd/ and tools/, belong to the product too.
// Every other package is tooling: commands and kits for tests and tools.
// Per area: files, lines, the largest file, the type with most methods.
// Methods are counted per receiver base type per package.
// Files over 600 lines and types over 25 methods are listed.
//
// Comments: the text of Go comments, in sentences of words.
// Directives, lines of code (a tab after //) and example output are left out.
// A sentence ends at a full stop, "?" or "!" before a space or the end.
// Dots inside a word (main.go, 1.26.8) and in "e.g.", "i.e." do not end one.
// A blank comment line, a list item or a trailing comment parts sentences.
// Words are the space-separated tokens with a letter or a digit.
//
// Settings: the SECKILL_* names in string literals of config/, tests left out.
// A variable's fields: the field its name spells (SECKILL_HTTP_ADDR, HTTPAddr),
// the field whose tag, comment or doc names it first, and the one field of
// a table row naming it. A place is a top-level declaration naming the
// variable or one of its fields; lines are the source lines that do.
//
// Lua KEYS: the scripts are the .lua files a //go:embed line names.
// One place per script whose own comments mention KEYS, plus one per Go
// file with a declaration whose comments and strings name the script and
// KEYS.
//
// Duplicates: the pair count of `duplicates --repo DIR`, when on the PATH.
package house

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Report holds every measure of one tree.
type Report struct {
	Dir        string       `json:"dir"`
	Root       Root         `json:"root"`
	Product    Area         `json:"product"`
	Tooling    Area         `json:"tooling"`
	Comments   CommentStats `json:"comments"`
	Packages   []PkgComment `json:"comment_packages"`
	Settings   Settings     `json:"settings"`
	LuaKeys    LuaKeys      `json:"lua_keys"`
	Duplicates Duplicates   `json:"duplicates"`
}

// Root is what the top folder holds.
type Root struct {
	Entries        int `json:"entries"`
	VisibleEntries int `json:"visible_entries"`
	GoFiles        int `json:"go_files"`
	GoLines        int `json:"go_lines"`
	TestFiles      int `json:"test_files"`
	TestLines      int `json:"test_lines"`
}

// Options change how Measure runs.
type Options struct {
	// Duplicates is the duplicates command; empty leaves the measure n/a.
	Duplicates string
}

// tree is the list of files of a measured folder.
type tree struct {
	dir   string
	files []string // slash paths relative to dir, sorted
}

// Measure computes the report of the tree in dir.
func Measure(dir string, opt Options) (*Report, error) {
	t, err := listTree(dir)
	if err != nil {
		return nil, err
	}
	gos, err := t.goFiles()
	if err != nil {
		return nil, err
	}
	r := &Report{Dir: dir, Root: t.root(gos)}
	product, tooling := splitAreas(t.module(), gos)
	r.Product = measureArea("product", product)
	r.Tooling = measureArea("tooling", tooling)
	r.Comments, r.Packages = measureComments(gos)
	if r.Settings, err = measureSettings(gos); err != nil {
		return nil, err
	}
	if r.LuaKeys, err = t.measureLuaKeys(gos); err != nil {
		return nil, err
	}
	r.Duplicates = runDuplicates(opt.Duplicates, dir)
	return r, nil
}

// listTree lists the files git tracks when dir is a work tree's top, and
// every regular file below dir otherwise.
func listTree(dir string) (*tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	t := &tree{dir: abs}
	if gitTop(abs) {
		out, err := exec.Command("git", "-C", abs, "ls-files", "-z").Output()
		if err != nil {
			return nil, fmt.Errorf("house: git ls-files: %w", err)
		}
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" {
				continue
			}
			// A tracked file deleted in the work tree is not there to read.
			if st, err := os.Lstat(filepath.Join(abs, f)); err == nil && st.Mode().IsRegular() {
				t.files = append(t.files, f)
			}
		}
	} else {
		err = filepath.WalkDir(abs, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(abs, p)
				t.files = append(t.files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(t.files)
	return t, nil
}

// gitTop reports whether dir is the top folder of a git work tree.
func gitTop(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return false
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return false
	}
	top, err1 := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	here, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && top == here
}

// module returns the module path of the tree's go.mod, or "".
func (t *tree) module() string {
	f, err := os.Open(filepath.Join(t.dir, "go.mod"))
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// root counts the top folder's entries and Go files.
func (t *tree) root(gos []*goFile) Root {
	var r Root
	seen := map[string]bool{}
	for _, f := range t.files {
		name, _, _ := strings.Cut(f, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		r.Entries++
		if !strings.HasPrefix(name, ".") {
			r.VisibleEntries++
		}
	}
	for _, g := range gos {
		if g.dir != "." {
			continue
		}
		if g.test {
			r.TestFiles++
			r.TestLines += g.lines
		} else {
			r.GoFiles++
			r.GoLines += g.lines
		}
	}
	return r
}

// goPath reports whether a slash path is a Go file the go tool would read.
func goPath(p string) bool {
	if !strings.HasSuffix(p, ".go") {
		return false
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if el == "testdata" || el == "vendor" || (el != "." && (strings.HasPrefix(el, ".") || strings.HasPrefix(el, "_"))) {
			return false
		}
	}
	base := path.Base(p)
	return !strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "_")
}

// countLines counts lines as wc -l does, plus an unterminated last line.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}
