// Package house measures how readable the source tree is, so that a change
// to its layout can show its effect in numbers anyone can reproduce.
//
// Measure reads a tree and returns a Report; Main is the `harness house`
// subcommand that prints it as a markdown table or as JSON. Every measure
// is defined below; docs/house.md repeats the definitions with the figures.
//
// The files. In a git work tree's top folder the files are those git
// tracks; elsewhere every file below the folder. Go files count when no
// path element is testdata, vendor, or starts with "." or "_", and the file
// is not generated (a "Code generated ... DO NOT EDIT." line). Lines are
// counted as wc -l does, plus one for a last line without a newline.
//
// Root. Entries are the names in the top folder (files and folders, dot
// names included); visible entries leave the dot names out. Root tests are
// the *_test.go files in the top folder and their lines.
//
// Areas. The product is every package the root package reaches through the
// imports of its non-test files, plus every package that has test files
// only (tests of the product), outside cmd/. The tooling is every other
// package: the commands (cmd/..., loadtest/driver) and the kits that serve
// tests and the harness (internal/audit, internal/testpair, live/livetest).
// Per area: the files and lines (tests included, and tests alone); the
// largest file, with tests and without; the type with the most methods
// (methods per receiver base type per package, with tests and without);
// the files over 600 lines and the types over 25 methods.
//
// Comments. The text of every Go comment, without directives (//go:...,
// //line, // +build, //nolint...), lines of code (indented by a tab after
// the comment marker) and example output. A trailing comment stands alone;
// a blank comment line, a list item or a skipped line ends a sentence too.
// Sentences end at . ? or ! before a space or the end, except in "e.g.",
// "i.e.", "etc.", "vs." and "cf."; dots inside a word (main.go, 1.26.8)
// never end one. Words are the space-separated tokens with a letter or a
// digit. Per package and in total: sentences, mean and median words, and
// the sentences past 40 words.
//
// Settings. The variables are the SECKILL_* names in string literals of the
// non-test files in config/. A variable's fields are the struct fields whose
// doc, comment or tag names the variable, and the fields named (x.F or F:)
// in a composite literal element that also names it (a table row). A place
// is a top-level declaration (a function, or one spec of a var, const or
// type declaration) whose comments, strings or identifiers name the
// variable or one of its fields; lines are the distinct source lines that
// do. Reported: the variables, the mean and maximum places and lines.
//
// Lua KEYS. For each lua/*.lua script: one place when its own comments
// (-- lines) mention KEYS, plus one per Go file (non-test, not generated)
// holding a top-level declaration whose comments and strings name both
// the script's file name and KEYS. Reported: mean and maximum per script.
//
// Duplicates. The pair count on the first line of `duplicates --repo DIR`
// when the command is on the PATH, else n/a.
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
