package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// goFile is one parsed Go file of the tree.
type goFile struct {
	path  string // slash path relative to the tree
	dir   string // slash folder, "." for the top
	test  bool
	lines int
	src   []byte
	fset  *token.FileSet
	ast   *ast.File
}

// Limits past which a file or a type counts as too large.
const (
	maxFileLines   = 600
	maxTypeMethods = 25
)

// goFiles parses the tree's Go files, leaving generated ones out.
func (t *tree) goFiles() ([]*goFile, error) {
	var out []*goFile
	for _, p := range t.files {
		if !goPath(p) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(t.dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(f) {
			continue
		}
		out = append(out, &goFile{
			path: p, dir: path.Dir(p), test: strings.HasSuffix(p, "_test.go"),
			lines: countLines(src), src: src, fset: fset, ast: f,
		})
	}
	return out, nil
}

// splitAreas parts the files into product and tooling, as the package
// documentation defines them.
func splitAreas(module string, gos []*goFile) (product, tooling []*goFile) {
	imports := map[string][]string{} // folder -> folders its non-test files import
	onlyTests := map[string]bool{}
	for _, g := range gos {
		if _, ok := onlyTests[g.dir]; !ok {
			onlyTests[g.dir] = true
		}
		if g.test {
			continue
		}
		onlyTests[g.dir] = false
		for _, im := range g.ast.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if module == "" {
				continue
			}
			if p == module {
				imports[g.dir] = append(imports[g.dir], ".")
			} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[g.dir] = append(imports[g.dir], rest)
			}
		}
	}
	reached := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if reached[dir] {
			return
		}
		reached[dir] = true
		for _, d := range imports[dir] {
			visit(d)
		}
	}
	if !onlyTests["."] && hasDir(gos, ".") {
		visit(".")
	}
	for _, g := range gos {
		if reached[g.dir] || (onlyTests[g.dir] && !under(g.dir, "cmd") && !under(g.dir, "tools")) {
			product = append(product, g)
		} else {
			tooling = append(tooling, g)
		}
	}
	return product, tooling
}

func hasDir(gos []*goFile, dir string) bool {
	for _, g := range gos {
		if g.dir == dir {
			return true
		}
	}
	return false
}

// under reports whether the slash folder dir is top or below it.
func under(dir, top string) bool {
	return dir == top || strings.HasPrefix(dir, top+"/")
}

// Area is the size of one part of the code.
type Area struct {
	Name            string       `json:"name"`
	Packages        []string     `json:"packages"` // folders
	Files           int          `json:"files"`
	Lines           int          `json:"lines"`
	TestFiles       int          `json:"test_files"`
	TestLines       int          `json:"test_lines"`
	Largest         FileSize     `json:"largest"`          // tests included
	LargestNonTest  FileSize     `json:"largest_non_test"` // tests left out
	MostMethods     TypeSize     `json:"most_methods"`     // methods in test files included
	MostMethodsCode TypeSize     `json:"most_methods_non_test"`
	FilesOver       []FileSize   `json:"files_over_600"`
	TypesOver       []TypeSize   `json:"types_over_25"`
	Comments        CommentStats `json:"comments"`
}

// FileSize is a file and its lines.
type FileSize struct {
	Path  string `json:"path"`
	Lines int    `json:"lines"`
}

// TypeSize is a type of a package and its methods.
type TypeSize struct {
	Package string `json:"package"` // folder
	Type    string `json:"type"`
	Methods int    `json:"methods"`
}

func (f FileSize) String() string {
	if f.Path == "" {
		return "none"
	}
	return f.Path + " (" + strconv.Itoa(f.Lines) + ")"
}

func (t TypeSize) String() string {
	if t.Type == "" {
		return "none"
	}
	return t.Package + "." + t.Type + " (" + strconv.Itoa(t.Methods) + ")"
}

// measureArea sizes the files of one area.
func measureArea(name string, gos []*goFile) Area {
	a := Area{Name: name, Packages: []string{}, FilesOver: []FileSize{}, TypesOver: []TypeSize{}}
	type key struct{ dir, pkg, typ string }
	all := map[key]int{}
	code := map[key]int{}
	seen := map[string]bool{}
	for _, g := range gos {
		if !seen[g.dir] {
			seen[g.dir] = true
			a.Packages = append(a.Packages, g.dir)
		}
		a.Files++
		a.Lines += g.lines
		fs := FileSize{g.path, g.lines}
		if g.test {
			a.TestFiles++
			a.TestLines += g.lines
		} else if bigger(fs, a.LargestNonTest) {
			a.LargestNonTest = fs
		}
		if bigger(fs, a.Largest) {
			a.Largest = fs
		}
		if g.lines > maxFileLines {
			a.FilesOver = append(a.FilesOver, fs)
		}
		for _, d := range g.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			typ := receiverBase(fd.Recv.List[0].Type)
			if typ == "" {
				continue
			}
			k := key{g.dir, g.ast.Name.Name, typ}
			all[k]++
			if !g.test {
				code[k]++
			}
		}
	}
	sort.Strings(a.Packages)
	a.Comments, _ = measureComments(gos)
	most := func(m map[key]int) TypeSize {
		var best TypeSize
		for k, n := range m {
			ts := TypeSize{k.dir, k.typ, n}
			if n > best.Methods || (n == best.Methods && ts.String() < best.String()) {
				best = ts
			}
		}
		return best
	}
	a.MostMethods = most(all)
	a.MostMethodsCode = most(code)
	for k, n := range all {
		if n > maxTypeMethods {
			a.TypesOver = append(a.TypesOver, TypeSize{k.dir, k.typ, n})
		}
	}
	sort.Slice(a.FilesOver, func(i, j int) bool { return bigger(a.FilesOver[i], a.FilesOver[j]) })
	sort.Slice(a.TypesOver, func(i, j int) bool {
		x, y := a.TypesOver[i], a.TypesOver[j]
		if x.Methods != y.Methods {
			return x.Methods > y.Methods
		}
		return x.String() < y.String()
	})
	return a
}

// bigger orders files by lines, then by path.
func bigger(a, b FileSize) bool {
	if a.Lines != b.Lines {
		return a.Lines > b.Lines
	}
	return b.Path == "" || a.Path < b.Path
}

// receiverBase names the type of a receiver: T for T, *T, T[K] and *T[K].
func receiverBase(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
