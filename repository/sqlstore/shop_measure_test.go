package sqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// measureShops is how many shops TestShopSearchMeasure searches.
const measureShops = 100_000

// measureName is the name of shop i of the measurement: English ("Green
// Tea House 4711") and Chinese (杭州茶餐厅 4711) names of a few hundred
// words each, so that common bigrams ("ea", "餐厅") are held by thousands
// of shops and rare ones by a few. Shop 777 is the demo shop's name.
func measureName(rng *rand.Rand, i int) string {
	if i == 777 {
		return "秒杀示范店"
	}
	adj := []string{"Green", "Golden", "Happy", "Little", "Old", "Royal", "Sunny", "Lucky", "Blue", "Red", "Silver", "Jade"}
	what := []string{"Tea", "Noodle", "Dumpling", "Coffee", "Rice", "Hotpot", "Bakery", "Grill", "Soup", "Sushi", "Pizza", "Juice"}
	kind := []string{"House", "Shop", "Kitchen", "Bar", "Corner", "Garden", "Station", "Hall"}
	city := []string{"杭州", "上海", "北京", "成都", "广州", "深圳", "西湖", "南京", "苏州", "武汉", "长沙", "重庆"}
	food := []string{"茶餐厅", "面馆", "火锅", "咖啡", "饺子馆", "烧烤", "甜品店", "奶茶", "小吃", "酒楼", "粥铺", "寿司"}
	if i%2 == 0 {
		return fmt.Sprintf("%s %s %s %d", adj[rng.IntN(len(adj))], what[rng.IntN(len(what))], kind[rng.IntN(len(kind))], i)
	}
	return fmt.Sprintf("%s%s %d", city[rng.IntN(len(city))], food[rng.IntN(len(food))], i)
}

// TestShopSearchMeasure measures the shop search on 100,000 shops on the
// real MariaDB (a database of its own) and writes the figures, the machine,
// the date and the command to $SECKILL_SHOP_SEARCH_RESULTS (make
// bench-shop-search: tools/bench/SHOP-SEARCH.md). Skipped unless set.
func TestShopSearchMeasure(t *testing.T) {
	out := os.Getenv("SECKILL_SHOP_SEARCH_RESULTS")
	if out == "" {
		t.Skip("SECKILL_SHOP_SEARCH_RESULTS not set (make bench-shop-search)")
	}
	db := privateDatabases(t)["mysql"]
	if db == nil {
		t.Fatal("SECKILL_MYSQL_DSN not set")
	}
	ctx := context.Background()
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1) // the session's Handler_read counters
	rng := rand.New(rand.NewPCG(45, 45))
	names := make([]string, measureShops)
	for i := range names {
		names[i] = measureName(rng, i)
	}
	start := time.Now()
	if err := FillShops(ctx, db, measureShops, func(i int) string { return names[i] }); err != nil {
		t.Fatal(err)
	}
	fill := time.Since(start)
	var entries int64
	db.Gorm.Raw("SELECT COUNT(*) FROM tb_shop_bigram").Scan(&entries)
	start = time.Now()
	if _, err := db.BackfillShopGrams(ctx); err != nil {
		t.Fatal(err)
	}
	backfillNone := time.Since(start)
	db.Gorm.Exec("ANALYZE TABLE tb_shop, tb_shop_bigram")

	r := NewShops(db)
	queries := []struct{ q, what string }{
		{"示范", "the demo shop's infix (1 shop)"},
		{"tea", "an English infix, common"},
		{"Tea House 4", "common bigrams, a rarer whole"},
		{"ea house 9999", "common bigrams, no match"},
		{"餐厅", "a Chinese infix, common"},
		{"西湖奶茶 8", "Chinese and digits"},
		{"no such shop", "nothing matches"},
		{"茶", "one character (the bounded fallback)"},
		{"q", "one character nothing holds"},
	}
	const runs = 200
	var rows []string
	for _, tc := range queries {
		before := handlerReads(t, db)
		got, err := r.ListShops(ctx, tc.q, 50)
		reads := handlerReads(t, db) - before
		reads -= handlerReads(t, db) - before - reads // SHOW STATUS's own
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		lq := strings.ToLower(tc.q)
		for _, n := range names {
			if strings.Contains(strings.ToLower(n), lq) {
				want++
			}
		}
		times := make([]time.Duration, runs)
		for i := range times {
			s := time.Now()
			if _, err := r.ListShops(ctx, tc.q, 50); err != nil {
				t.Fatal(err)
			}
			times[i] = time.Since(s)
		}
		slices.Sort(times)
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %d | %d | %d | %s | %s | %s |", tc.q, tc.what, want, len(got), reads,
			ms(times[runs/2]), ms(times[runs*95/100]), ms(times[runs-1])))
		if reads > SearchReadBound+2*50+10 {
			t.Errorf("%q: %d rows read, over the bound %d", tc.q, reads, SearchReadBound)
		}
		if want > 0 && len(got) == 0 {
			t.Errorf("%q: nothing found, %d shops hold it", tc.q, want)
		}
	}

	// For comparison: the scan a LIKE '%…%' does (no index serves it).
	before := handlerReads(t, db)
	s := time.Now()
	var n int64
	db.Gorm.Raw("SELECT COUNT(*) FROM (SELECT id FROM tb_shop WHERE name LIKE '%ea house 9999%' LIMIT 50) t").Scan(&n)
	scan := time.Since(s)
	scanReads := handlerReads(t, db) - before
	scanReads -= handlerReads(t, db) - before - scanReads

	plan, err := ExplainSearch(ctx, db, "ea")
	if err != nil {
		t.Fatal(err)
	}
	var version string
	db.Gorm.Raw("SELECT VERSION()").Scan(&version)
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()

	var doc strings.Builder
	fmt.Fprintf(&doc, `# Shop search on %d shops

Written by `+"`make bench-shop-search`"+` (TestShopSearchMeasure in
repository/sqlstore/shop_measure_test.go): a database of its own on the
MariaDB of SECKILL_MYSQL_DSN, %d shops with English and Chinese names
(`+"`Golden Tea House 4711`, `杭州茶餐厅 4711`"+`, shop 777 named 秒杀示范店), their
%d index entries in tb_shop_bigram, then each search once for the rows it
reads (the session's Handler_read_* counters) and %d times for its time.
The bound of every search is %d index entries and rows (SearchReadBound),
whatever the number of shops; docs/api.md, "Shop search", says how.

- Date: %s
- Commit: %s
- Machine: %s, %d CPUs (shared with other work: load average %s at the end), %s
- Database: MariaDB %s, Go %s
- Command: `+"`source .ci/env.sh && make bench-shop-search`"+`

| query | what | shops holding it | answered (at most 50) | rows read | median ms | p95 ms | max ms |
|---|---|---|---|---|---|---|---|
%s

For comparison, `+"`name LIKE '%%ea house 9999%%'`"+` (no index can serve it)
read %d rows in %.1f ms.

Filling: %d shops inserted and indexed in %.1f s; a Migrate's backfill
with nothing to index (every start) took %.0f ms.

EXPLAIN of a search's candidate read (SearchChunkSQL, the bigram "ea"):

`+"```"+`
%s`+"```"+`
`, measureShops, measureShops, entries, runs, SearchReadBound,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.TrimSpace(string(commit)), cpu, runtime.NumCPU(), load,
		strings.TrimSpace(string(kernel)), version, runtime.Version(), strings.Join(rows, "\n"),
		scanReads, float64(scan.Microseconds())/1000, measureShops, fill.Seconds(), float64(backfillNone.Microseconds())/1000, plan)
	if err := os.WriteFile(out, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", out, doc.String())
}
