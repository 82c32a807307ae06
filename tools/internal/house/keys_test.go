package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// keyFiles are the files that name the product's Redis keys, with the key
// literals each may hold (nil for any): the Redis store's, and those of the
// locks service takes, in lock, which derives their fencing counters.
var keyFiles = map[string][]string{
	"repository/redisstore/keys.go": nil,
	"lock/keys.go":                  {"lock:order:", "lock:seckill:reconcile"},
}

// notKeys are literals that look like Redis key prefixes and are not keys
// of the product, by file, each with the reason.
// mockKey: the in-memory fake's own map key, no Redis key.
const mockKey = "the fake's map key, not Redis"

var notKeys = map[string]map[string]string{
	"main.go":                                {"seckill:": "the prefix of the exit message"},
	"service/account/accounttest/codes.go":   {"addr:": mockKey, "cooldown:": mockKey, "daily:": mockKey},
	"tools/cmd/testenv/main.go":              {"testenv:": "the prefix of its messages"},
	"tools/cmd/harness/fairness/fairness.go": {"fairness:": "the prefix of its messages"},
	"config/docgen/main.go":                  {"docgen:": "the prefix of its messages"},
	"tools/internal/house/report.go":         {"house:": "the prefix of its messages"},
	"tools/loadtest/driver/main.go":          {"driver:": "the prefix of its messages"},
	"testkit/browsertest/browsertest.go":     {"about:blank": "a URL"},
	"repository/sqlstore/db.go":              {"file:": "the SQLite file name's scheme"},
	"repository/redisstore/epochs.go":        {"run_id:": "a field of INFO server"},
	"service/async/watch.go":                 {"redislost:": "a row of tb_seckill_meta, not a Redis key"},
	"model/live.go":                          {"code:": liveField},
	"observe/live/recorder.go": {
		"code:": liveField, "dup:": liveField, "lat:": liveField, "lat:ns:": liveField, "lat:sum": liveField,
	},
	"tools/cmd/harness/bench/limits.go": {
		"bench:lock:__rand_int__": benchScratch, "bench:lock:__rand_int__:fence": benchScratch,
		"bench:lock:*": benchScratch, "bench:lock:%012d": benchScratch,
	},
	"tools/cmd/harness/bench/server.go": {"bench:lock:*": benchScratch},
	"tools/cmd/harness/bench/runs.go":   {"bench:orders": benchScratch},
}

const (
	liveField    = "a field of the hash seckill:live:<voucherId>"
	benchScratch = "a scratch key of the bench's redis-benchmark runs, deleted after them; no product process reads it"
)

// keyLike matches a literal that looks like a Redis key or its prefix:
// a lowercase word, a colon, then no space, slash, @ or parenthesis
// (URLs and DSNs have them).
var keyLike = regexp.MustCompile(`^[a-z][a-z0-9_.-]*:[^\s/@()]*$`)

// quoted finds the double-quoted strings inside a raw string (Lua, SQL).
var quoted = regexp.MustCompile(`"([^"\s]*)"`)

// keyLiteral is one key-like string literal of a non-test Go file.
type keyLiteral struct {
	file string
	line int
	text string
}

// keyLiterals lists the key-like literals of gos' non-test files. Struct
// tags and import paths are left out.
func keyLiterals(gos []*goFile) []keyLiteral {
	var out []keyLiteral
	for _, g := range gos {
		if g.test {
			continue
		}
		skip := map[*ast.BasicLit]bool{}
		for _, im := range g.ast.Imports {
			skip[im.Path] = true
		}
		ast.Inspect(g.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					skip[n.Tag] = true
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || skip[n] {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				texts := []string{s}
				if strings.HasPrefix(n.Value, "`") {
					texts = texts[:0]
					for _, m := range quoted.FindAllStringSubmatch(s, -1) {
						texts = append(texts, m[1])
					}
				}
				for _, s := range texts {
					if keyLike.MatchString(s) {
						out = append(out, keyLiteral{g.path, g.fset.Position(n.Pos()).Line, s})
					}
				}
			}
			return true
		})
	}
	return out
}

// undeclaredKeys is the key-like literals outside keyFiles and notKeys, and
// those in a key file that it may not hold.
func undeclaredKeys(lits []keyLiteral) []string {
	var bad []string
	for _, l := range lits {
		allowed, isKeyFile := keyFiles[l.file]
		switch {
		case isKeyFile && (allowed == nil || contains(allowed, l.text)):
		case notKeys[l.file][l.text] != "":
		default:
			bad = append(bad, l.file+":"+strconv.Itoa(l.line)+": "+strconv.Quote(l.text))
		}
	}
	sort.Strings(bad)
	return bad
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRedisKeysDeclared: every literal of a non-test Go file that looks like
// a Redis key lives in a key file, or is listed as no key of the product.
func TestRedisKeysDeclared(t *testing.T) {
	tr, err := listTree("../../..")
	if err != nil {
		t.Fatal(err)
	}
	gos, err := tr.goFiles()
	if err != nil {
		t.Fatal(err)
	}
	lits := keyLiterals(gos)
	for _, b := range undeclaredKeys(lits) {
		t.Errorf("a Redis key named outside the key files: %s", b)
	}
	// An exception no file holds any more goes from the list.
	seen := map[string]bool{}
	for _, l := range lits {
		seen[l.file+" "+l.text] = true
	}
	for file, texts := range notKeys {
		for text := range texts {
			if !seen[file+" "+text] {
				t.Errorf("notKeys: %s no longer holds %q", file, text)
			}
		}
	}
}

// TestUndeclaredKeysFound: the check finds a key built outside the key
// files, in a string or inside a raw string, and one that a key file may
// not hold. It leaves out struct tags, import paths, test files and the
// listed exceptions.
func TestUndeclaredKeysFound(t *testing.T) {
	files := map[string]string{
		"service/order.go": "package service\n\nimport \"strconv\"\n\n" +
			"type row struct {\n\tID int `gorm:\"column:id\"`\n}\n\n" +
			"func lockKey(u int64) string { return \"lock:order:\" + strconv.FormatInt(u, 10) }\n\n" +
			"const fill = `redis.call(\"SET\", \"scratch:key\", 1)`\n\nconst msg = \"two words: text\"\n",
		"service/order_test.go":         "package service\n\nconst k = \"test:stream:\"\n",
		"repository/redisstore/keys.go": "package redisstore\n\nconst stock = \"stock:\"\n",
		"lock/keys.go":                  "package lock\n\nconst order = \"lock:order:\"\n\nconst stock = \"seckill:stock:\"\n",
		"observe/live/recorder.go":      "package live\n\nconst codePrefix = \"code:\"\n",
	}
	var gos []*goFile
	for p, src := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		gos = append(gos, &goFile{path: p, test: strings.HasSuffix(p, "_test.go"), fset: fset, ast: f})
	}
	got := undeclaredKeys(keyLiterals(gos))
	want := []string{`lock/keys.go:5: "seckill:stock:"`, `service/order.go:9: "lock:order:"`, `service/order.go:11: "scratch:key"`}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
