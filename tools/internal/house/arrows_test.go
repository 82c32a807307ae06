package house

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// arrowSign parts a line of the layer list: the package, then what it
// imports. "nothing of the project" is the empty list.
const (
	arrowSign = "──>"
	noImports = "nothing of the project"
)

// docArrows reads the arrows of the layer list: every line of a code block
// of docs/layers.md holding arrowSign. It returns each package's imports,
// and the packages in the order of their lines.
func docArrows(text string) (map[string][]string, []string, error) {
	arrows := map[string][]string{}
	var order []string
	inCode := false
	s := bufio.NewScanner(strings.NewReader(text))
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		from, to, ok := strings.Cut(line, arrowSign)
		if !inCode || !ok {
			continue
		}
		var imports []string
		if to = strings.TrimSpace(to); to != noImports {
			imports = names(to)
		}
		for _, p := range names(from) {
			if _, dup := arrows[p]; dup {
				return nil, nil, fmt.Errorf("line %d: %s has a second line", n, p)
			}
			arrows[p] = imports
			order = append(order, p)
		}
	}
	return arrows, order, nil
}

// names splits a comma-separated list; a word in parentheses after a
// name, as in "seckill (main.go)", is a note.
func names(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(f), " "); name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// goListArrows is each package of the product and the project's packages
// its non-test files import, by `go list -deps` of the root package in dir
// and of productRoots. Names are relative to the module, the root package
// named by the module.
func goListArrows(dir string) (map[string][]string, error) {
	args := append([]string{"list", "-deps", "-f", "{{.Module}}|{{.ImportPath}}|{{join .Imports \" \"}}", "."}, productRoots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	arrows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, rest, _ := strings.Cut(line, "|")
		pkg, imports, _ := strings.Cut(rest, "|")
		if mod == "" || mod == "<nil>" || !within(mod, pkg) {
			continue
		}
		var own []string
		for _, im := range strings.Fields(imports) {
			if within(mod, im) {
				own = append(own, relative(mod, im))
			}
		}
		sort.Strings(own)
		arrows[relative(mod, pkg)] = own
	}
	return arrows, nil
}

func within(mod, pkg string) bool { return pkg == mod || strings.HasPrefix(pkg, mod+"/") }

func relative(mod, pkg string) string {
	if pkg == mod {
		return mod
	}
	return strings.TrimPrefix(pkg, mod+"/")
}

// productRoots are packages of the product that the entry point may not
// import yet: the pay providers' adapters (pay/...) are listed before app
// wires them.
var productRoots = []string{"./pay/..."}

// forbidden are arrows that no list may draw: each package, and the
// packages it never imports (a package named stands for its sub-packages
// too, on both sides of the arrow).
var forbidden = map[string][]string{
	// config holds plain values; app turns them into each package's options.
	"config": {"lock", "service"},
	// The stores and the lock answer service in model's terms.
	"service": {"lock/scripts", "repository"},
}

// domains are the service's domain packages (docs/layers.md). None imports
// another: a domain that needs another's work declares the interface it
// consumes, and app wires the two. What several domains share lives in a
// kernel package under service/internal.
var domains = []string{"service/account", "service/catalog", "service/payment", "service/room", "service/sale", "service/async"}

// withDomains is forbidden with every domain forbidding the others.
func withDomains(forbidden map[string][]string, domains []string) map[string][]string {
	out := map[string][]string{}
	for p, f := range forbidden {
		out[p] = append(out[p], f...)
	}
	for _, d := range domains {
		for _, other := range domains {
			if other != d {
				out[d] = append(out[d], other)
			}
		}
	}
	return out
}

// arrowProblems compares the documented arrows with the imports. It also
// wants every arrow to point down the list, and none to be forbidden.
func arrowProblems(doc map[string][]string, order []string, real, forbidden map[string][]string) []string {
	var out []string
	line := map[string]int{}
	for i, p := range order {
		line[p] = i
	}
	for p, imports := range real {
		for _, im := range imports {
			for from, fs := range forbidden {
				if !under(p, from) {
					continue
				}
				for _, f := range fs {
					if under(im, f) && !under(p, f) {
						out = append(out, fmt.Sprintf("%s ──> %s is forbidden", p, im))
					}
				}
			}
		}
		listed, ok := doc[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s: missing from the list; it imports %s", p, describe(imports)))
			continue
		}
		if !reflect.DeepEqual(listed, imports) {
			out = append(out, fmt.Sprintf("%s: the list says %s ──> %s; go list says %s", p, p, describe(listed), describe(imports)))
		}
		for _, im := range imports {
			if i, ok := line[im]; ok && i <= line[p] {
				out = append(out, fmt.Sprintf("%s ──> %s points up the list", p, im))
			}
		}
	}
	for p := range doc {
		if _, ok := real[p]; !ok {
			out = append(out, p+": in the list, not a package of the product")
		}
	}
	sort.Strings(out)
	return out
}

func describe(imports []string) string {
	if len(imports) == 0 {
		return noImports
	}
	return strings.Join(imports, ", ")
}

// TestLayerArrows: docs/layers.md lists every package of the product with
// exactly the project packages it imports, every arrow points down, and
// none is forbidden.
func TestLayerArrows(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	text, err := os.ReadFile(filepath.Join(root, "docs", "layers.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, order, err := docArrows(string(text))
	if err != nil {
		t.Fatal(err)
	}
	real, err := goListArrows(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range arrowProblems(doc, order, real, withDomains(forbidden, domains)) {
		t.Errorf("docs/layers.md: %s", p)
	}
	for _, p := range kitProblems(real) {
		t.Error(p)
	}
}

// isTestKit: a kit of tests and tools, which no product package imports.
// That is every package under testkit/, and one named <domain>test
// (catalogtest, ordertest, livetest, apptest, ...).
func isTestKit(pkg string) bool {
	return under(pkg, "testkit") || strings.HasSuffix(path.Base(pkg), "test")
}

// kitProblems reports each arrow of the product that points to a test kit.
func kitProblems(real map[string][]string) []string {
	var out []string
	for p, imports := range real {
		for _, im := range imports {
			if isTestKit(im) {
				out = append(out, fmt.Sprintf("%s ──> %s: a product package imports a test kit", p, im))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestKitProblemsFound: an arrow to a package under testkit/ or to a
// <domain>test package is reported; others are not.
func TestKitProblemsFound(t *testing.T) {
	real := map[string][]string{
		"app": {"testkit/redisproc", "service/sale"}, "service/sale": {"service/internal/ordertest", "model"},
		"model": nil, "testkit/redisproc": nil, "service/internal/ordertest": nil,
	}
	want := []string{
		"app ──> testkit/redisproc: a product package imports a test kit",
		"service/sale ──> service/internal/ordertest: a product package imports a test kit",
	}
	if got := kitProblems(real); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestArrowProblemsFound: a missing arrow, an arrow that is not there, a
// package left out, one that is no package, an arrow pointing up and a
// forbidden one are each reported.
func TestArrowProblemsFound(t *testing.T) {
	doc, order, err := docArrows("```\nhandler ──> service\nconfig ──> service\nservice ──> model, lock\ngone ──> model\n" +
		"lock, model ──> nothing of the project\n```\nprose ──> not read\n")
	if err != nil {
		t.Fatal(err)
	}
	real := map[string][]string{
		"handler": {"service", "telemetry"}, "config": {"service"}, "service": {"model"}, "model": nil,
		"lock": {"service"}, "telemetry": nil,
	}
	got := arrowProblems(doc, order, real, map[string][]string{"config": {"lock", "service"}})
	want := []string{
		"config ──> service is forbidden",
		"gone: in the list, not a package of the product",
		"handler: the list says handler ──> service; go list says service, telemetry",
		"lock ──> service points up the list",
		"lock: the list says lock ──> nothing of the project; go list says service",
		"service: the list says service ──> lock, model; go list says model",
		"telemetry: missing from the list; it imports nothing of the project",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, _, err := docArrows("```\nlock ──> lua\nlock ──> model\n```\n"); err == nil {
		t.Error("a package on two lines: no error")
	}
}

// TestDomainArrowRefused: a domain package importing another domain (or
// one of its sub-packages) is reported whatever the list says; a domain
// importing a kernel package under service/internal, and the service
// importing a domain, are not.
func TestDomainArrowRefused(t *testing.T) {
	doc, order, err := docArrows("```\nservice ──> service/room, service/sale\nservice/sale ──> service/internal/kernel, service/room/roomtest\n" +
		"service/room ──> service/internal/kernel\nservice/room/roomtest ──> nothing of the project\nservice/internal/kernel ──> nothing of the project\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	real := map[string][]string{
		"service":      {"service/room", "service/sale"},
		"service/sale": {"service/internal/kernel", "service/room/roomtest"},
		"service/room": {"service/internal/kernel"}, "service/room/roomtest": nil, "service/internal/kernel": nil,
	}
	got := arrowProblems(doc, order, real, withDomains(nil, []string{"service/room", "service/sale"}))
	want := []string{"service/sale ──> service/room/roomtest is forbidden"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
