package house

import (
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// LuaKeys counts where each script's KEYS are documented.
type LuaKeys struct {
	Scripts    int         `json:"scripts"`
	MeanPlaces float64     `json:"mean_places"`
	MaxPlaces  int         `json:"max_places"`
	PerScript  []LuaScript `json:"per_script"`
}

// LuaScript is one script's places.
type LuaScript struct {
	Name    string   `json:"name"`
	Header  bool     `json:"header"`   // its own comments mention KEYS
	GoFiles []string `json:"go_files"` // Go files naming it and KEYS
	Places  int      `json:"places"`
}

// keysWord matches KEYS as a word.
var keysWord = regexp.MustCompile(`\bKEYS\b`)

// measureLuaKeys measures the Redis scripts: the .lua files embedded by Go.
func (t *tree) measureLuaKeys(gos []*goFile) (LuaKeys, error) {
	k := LuaKeys{PerScript: []LuaScript{}}
	// The prose (comments and strings) of each top-level declaration
	// that mentions KEYS, per Go file.
	prose := map[string][]string{}
	for _, g := range gos {
		if g.test {
			continue
		}
		for _, d := range g.ast.Decls {
			for _, n := range specs(d) {
				if p := g.prose(n); keysWord.MatchString(p) {
					prose[g.path] = append(prose[g.path], p)
				}
			}
		}
	}
	for _, f := range t.embeddedLua(gos) {
		src, err := os.ReadFile(filepath.Join(t.dir, filepath.FromSlash(f)))
		if err != nil {
			return k, err
		}
		s := LuaScript{Name: path.Base(f), GoFiles: []string{}}
		for _, l := range strings.Split(string(src), "\n") {
			if _, c, ok := strings.Cut(l, "--"); ok && keysWord.MatchString(c) {
				s.Header = true
				break
			}
		}
		name := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(s.Name))
		for _, g := range gos {
			for _, p := range prose[g.path] {
				if name.MatchString(p) {
					s.GoFiles = append(s.GoFiles, g.path)
					break
				}
			}
		}
		s.Places = len(s.GoFiles)
		if s.Header {
			s.Places++
		}
		k.PerScript = append(k.PerScript, s)
		k.MeanPlaces += float64(s.Places)
		k.MaxPlaces = max(k.MaxPlaces, s.Places)
	}
	k.Scripts = len(k.PerScript)
	if k.Scripts > 0 {
		k.MeanPlaces /= float64(k.Scripts)
	}
	return k, nil
}

// prose returns the comments and string literals of a declaration,
// its doc comment included, one per line.
func (g *goFile) prose(n ast.Node) string {
	from, to := span(n)
	var b strings.Builder
	for _, cg := range g.ast.Comments {
		if cg.Pos() >= from && cg.End() <= to {
			b.WriteString(cg.Text())
			b.WriteByte('\n')
		}
	}
	ast.Inspect(n, func(m ast.Node) bool {
		if lit, ok := m.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			b.WriteString(lit.Value)
			b.WriteByte('\n')
		}
		return true
	})
	return b.String()
}

// span is the source of a declaration with its doc and line comments.
func span(n ast.Node) (from, to token.Pos) {
	from, to = n.Pos(), n.End()
	var doc, comment *ast.CommentGroup
	switch x := n.(type) {
	case *ast.FuncDecl:
		doc = x.Doc
	case *ast.GenDecl:
		doc = x.Doc
	case *ast.ValueSpec:
		doc, comment = x.Doc, x.Comment
	case *ast.TypeSpec:
		doc, comment = x.Doc, x.Comment
	}
	if doc != nil {
		from = doc.Pos()
	}
	if comment != nil {
		to = comment.End()
	}
	return from, to
}

// embeddedLua returns the .lua files that a //go:embed line of a non-test
// Go file names, by name or by pattern, in sorted order.
func (t *tree) embeddedLua(gos []*goFile) []string {
	named := map[string]bool{}
	for _, g := range gos {
		if g.test {
			continue
		}
		for _, cg := range g.ast.Comments {
			for _, c := range cg.List {
				args, ok := strings.CutPrefix(c.Text, "//go:embed ")
				if !ok {
					continue
				}
				for _, pat := range strings.Fields(args) {
					pat = path.Join(g.dir, strings.Trim(pat, "`\""))
					for _, f := range t.files {
						if ok, _ := path.Match(pat, f); ok && strings.HasSuffix(f, ".lua") {
							named[f] = true
						}
					}
				}
			}
		}
	}
	var out []string
	for _, f := range t.files {
		if named[f] {
			out = append(out, f)
		}
	}
	return out
}
