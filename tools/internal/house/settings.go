package house

import (
	"go/ast"
	"go/token"
	"regexp"
	"sort"
	"strings"
)

// Settings counts where each SECKILL_* variable is written in config/.
type Settings struct {
	Variables  int       `json:"variables"`
	MeanPlaces float64   `json:"mean_places"`
	MaxPlaces  int       `json:"max_places"`
	MaxVar     string    `json:"max_places_variable"`
	MeanLines  float64   `json:"mean_lines"`
	MaxLines   int       `json:"max_lines"`
	PerVar     []Setting `json:"per_variable"`
}

// Setting is one variable's places and lines.
type Setting struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
	Places int      `json:"places"`
	Lines  int      `json:"lines"`
}

// envName matches a variable's name.
var envName = regexp.MustCompile(`\bSECKILL_[A-Z0-9_]*[A-Z0-9]\b`)

// unit is one top-level declaration and what it names.
type unit struct {
	envs   map[string][]int // variable -> lines
	fields map[string][]int // identifier used as a field -> lines
}

// measureSettings measures the settings of the non-test files in config/.
func measureSettings(gos []*goFile) (Settings, error) {
	var units []unit
	vars := map[string]bool{}
	fields := map[string]map[string]bool{} // variable -> its fields
	link := func(v, f string) {
		if fields[v] == nil {
			fields[v] = map[string]bool{}
		}
		fields[v][f] = true
	}
	declared := map[string]bool{} // names of struct fields
	var files []*goFile
	for _, g := range gos {
		if g.dir == "config" && !g.test {
			files = append(files, g)
		}
	}
	for _, g := range files {
		ast.Inspect(g.ast, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, v := range envName.FindAllString(lit.Value, -1) {
					vars[v] = true
				}
			}
			return true
		})
	}
	for _, g := range files {
		for _, d := range g.ast.Decls {
			for _, node := range specs(d) {
				units = append(units, scanUnit(g, node))
			}
		}
		ast.Inspect(g.ast, func(n ast.Node) bool {
			// A field names its variable first in its tag, line
			// comment or doc.
			if st, ok := n.(*ast.StructType); ok {
				for _, f := range st.Fields.List {
					for _, name := range f.Names {
						declared[name.Name] = true
					}
					text := g.text(f.Pos(), f.End()) + "\n" + f.Comment.Text() + "\n" + f.Doc.Text()
					if v := envName.FindString(text); v != "" {
						for _, name := range f.Names {
							link(v, name.Name)
						}
					}
				}
			}
			// A table row names one variable and selects one field.
			if cl, ok := n.(*ast.CompositeLit); ok {
				for _, el := range cl.Elts {
					u := scanUnit(g, el)
					names := selected(el, declared)
					if len(u.envs) == 1 && len(names) == 1 {
						for v := range u.envs {
							link(v, names[0])
						}
					}
				}
			}
			return true
		})
	}
	// A field whose name spells the variable's: SECKILL_[DEV_]HTTP_ADDR
	// and HTTPAddr.
	for v := range vars {
		spelt := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(v, "SECKILL_"), "DEV_"), "_", ""))
		for f := range declared {
			if strings.ToLower(f) == spelt {
				link(v, f)
			}
		}
	}
	s := Settings{PerVar: []Setting{}}
	names := make([]string, 0, len(vars))
	for v := range vars {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		st := Setting{Name: v, Fields: []string{}}
		for f := range fields[v] {
			st.Fields = append(st.Fields, f)
		}
		sort.Strings(st.Fields)
		lines := map[int]bool{}
		for i, u := range units {
			hit := false
			for _, l := range u.envs[v] {
				hit = true
				lines[i<<24|l] = true
			}
			for _, f := range st.Fields {
				for _, l := range u.fields[f] {
					hit = true
					lines[i<<24|l] = true
				}
			}
			if hit {
				st.Places++
			}
		}
		st.Lines = len(lines)
		s.PerVar = append(s.PerVar, st)
	}
	s.Variables = len(s.PerVar)
	for _, st := range s.PerVar {
		s.MeanPlaces += float64(st.Places)
		s.MeanLines += float64(st.Lines)
		if st.Places > s.MaxPlaces {
			s.MaxPlaces, s.MaxVar = st.Places, st.Name
		}
		s.MaxLines = max(s.MaxLines, st.Lines)
	}
	if s.Variables > 0 {
		s.MeanPlaces /= float64(s.Variables)
		s.MeanLines /= float64(s.Variables)
	}
	return s, nil
}

// specs returns the places of one declaration: a function, or each spec.
// A declaration of one spec is one place with its doc.
func specs(d ast.Decl) []ast.Node {
	gd, ok := d.(*ast.GenDecl)
	if !ok {
		return []ast.Node{d}
	}
	if len(gd.Specs) == 1 {
		return []ast.Node{gd}
	}
	out := make([]ast.Node, len(gd.Specs))
	for i, sp := range gd.Specs {
		out[i] = sp
	}
	return out
}

// scanUnit lists the variables and fields a node names, by line. A file
// holds at most 1<<24 lines, which the line keys above rely on.
func scanUnit(g *goFile, n ast.Node) unit {
	u := unit{envs: map[string][]int{}, fields: map[string][]int{}}
	from, to := span(n)
	line := func(p token.Pos) int { return g.fset.Position(p).Line }
	for _, cg := range g.ast.Comments {
		for _, c := range cg.List {
			if c.Pos() >= from && c.End() <= to {
				for _, v := range envName.FindAllString(c.Text, -1) {
					u.envs[v] = append(u.envs[v], line(c.Pos()))
				}
			}
		}
	}
	ast.Inspect(n, func(m ast.Node) bool {
		switch x := m.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				for _, v := range envName.FindAllString(x.Value, -1) {
					u.envs[v] = append(u.envs[v], line(x.Pos()))
				}
			}
		case *ast.SelectorExpr:
			u.fields[x.Sel.Name] = append(u.fields[x.Sel.Name], line(x.Sel.Pos()))
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok {
				u.fields[id.Name] = append(u.fields[id.Name], line(id.Pos()))
			}
		case *ast.Field:
			for _, id := range x.Names {
				u.fields[id.Name] = append(u.fields[id.Name], line(id.Pos()))
			}
		}
		return true
	})
	return u
}

// text returns the source between two positions of the file.
func (g *goFile) text(from, to token.Pos) string {
	a, b := g.fset.Position(from).Offset, g.fset.Position(to).Offset
	if a < 0 || b > len(g.src) || a > b {
		return ""
	}
	return string(g.src[a:b])
}

// selected returns the declared fields a node selects (x.F), once each.
func selected(n ast.Node, declared map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	ast.Inspect(n, func(m ast.Node) bool {
		if sel, ok := m.(*ast.SelectorExpr); ok && declared[sel.Sel.Name] && !seen[sel.Sel.Name] {
			seen[sel.Sel.Name] = true
			out = append(out, sel.Sel.Name)
		}
		return true
	})
	return out
}
