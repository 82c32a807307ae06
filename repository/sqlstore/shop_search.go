package sqlstore

import (
	"context"
	"slices"
	"strings"

	"gorm.io/gorm"

	"seckill/model"
)

// The shop search's bounds. A search reads the count of each of its
// bigrams (tb_shop_gram, one primary-key read each), then at most
// SearchCandidates entries of its rarest bigram with their shops' names,
// in chunks from twice the answer's size up to searchChunk, whatever the
// number of shops: SearchReadBound index entries and rows in all.
const (
	// SearchCandidates is the most shops one search looks at: the first
	// ones, by id, that hold its rarest bigram (one character: the first
	// index entries of the bigrams it begins). Only a search whose every
	// bigram is held by more shops may miss matches past them.
	SearchCandidates = 5000
	searchChunk      = 1000
	// SearchReadBound is the most index entries and rows one search reads
	// (before the final read of its answer's shops): a count per bigram of
	// the longest name, then each candidate's index entry and its shop's
	// row, and a read more per chunk.
	SearchReadBound = 128 + 2*SearchCandidates + 2*SearchCandidates/100
)

// ShopGrams returns the index entries of a shop's name (tb_shop_bigram's
// gram): each bigram of the lower-cased name and its last character alone,
// as UTF-8, each once. "Tea" gives "te", "ea" and "a".
func ShopGrams(name string) []string {
	r := []rune(strings.ToLower(strings.TrimSpace(name)))
	if len(r) == 0 {
		return nil
	}
	out := make([]string, 0, len(r))
	for i := 0; i+1 < len(r); i++ {
		out = append(out, string(r[i:i+2]))
	}
	out = append(out, string(r[len(r)-1]))
	slices.Sort(out)
	return slices.Compact(out)
}

// queryGrams returns the bigrams of a query of two characters or more,
// each once.
func queryGrams(q []rune) []string {
	out := make([]string, 0, len(q))
	for i := 0; i+1 < len(q); i++ {
		out = append(out, string(q[i:i+2]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// writeGrams replaces the index entries of shop id by those of name, and
// the counts of the bigrams it adds and removes, on tx (the transaction
// that writes the shop).
func writeGrams(tx *gorm.DB, id int64, name string, replace bool) error {
	delta := map[string]int{}
	if replace {
		var old [][]byte
		if err := tx.Raw("SELECT gram FROM tb_shop_bigram WHERE shop_id = ?", id).Scan(&old).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM tb_shop_bigram WHERE shop_id = ?", id).Error; err != nil {
			return err
		}
		for _, g := range old {
			delta[string(g)]--
		}
	}
	for _, g := range ShopGrams(name) {
		delta[g]++
	}
	if err := insertGrams(tx, map[int64]string{id: name}); err != nil {
		return err
	}
	return addCounts(tx, delta)
}

// addCounts adds delta to the bigrams' counts (tb_shop_gram), in one
// statement in the bigrams' byte order: two shops written at once lock the
// counts they share in the same order.
func addCounts(tx *gorm.DB, delta map[string]int) error {
	grams := make([]string, 0, len(delta))
	for g, d := range delta {
		if d != 0 {
			grams = append(grams, g)
		}
	}
	if len(grams) == 0 {
		return nil
	}
	slices.Sort(grams)
	var sb strings.Builder
	args := make([]any, 0, 2*len(grams))
	for i, g := range grams {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("( ?, ?)") // not "(?": gorm would spread the bytes
		args = append(args, []byte(g), delta[g])
	}
	upsert := " ON DUPLICATE KEY UPDATE shops = shops + VALUES(shops)"
	if tx.Dialector.Name() == "sqlite" {
		upsert = " ON CONFLICT (gram) DO UPDATE SET shops = shops + excluded.shops"
	}
	return tx.Exec("INSERT INTO tb_shop_gram (gram, shops) VALUES "+sb.String()+upsert, args...).Error
}

// insertGrams adds the index entries of the shops' names; entries already
// there are kept (a backfill racing another is harmless).
func insertGrams(tx *gorm.DB, names map[int64]string) error {
	var sb strings.Builder
	var args []any
	for id, name := range names {
		for _, g := range ShopGrams(name) {
			if len(args) > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("( ?, ?)") // not "(?": gorm would spread the bytes
			args = append(args, []byte(g), id)
		}
	}
	if len(args) == 0 {
		return nil
	}
	verb := "INSERT IGNORE"
	if tx.Dialector.Name() == "sqlite" {
		verb = "INSERT OR IGNORE"
	}
	return tx.Exec(verb+" INTO tb_shop_bigram (gram, shop_id) VALUES "+sb.String(), args...).Error
}

// BackfillShopGrams writes the index entries of every shop that has none
// (shops written before tb_shop_bigram existed, or by an older version),
// in batches of 500 by id; Migrate calls it. It returns how many shops it
// indexed. Every shop of a current version has at least one entry (its
// last character), so a shop without any is one to index.
func (d *DB) BackfillShopGrams(ctx context.Context) (int, error) {
	db := d.Gorm.WithContext(ctx)
	// Counts missing beside entries (an index written before the counts
	// were kept): counted again.
	var counted, indexed []int
	if err := db.Raw("SELECT 1 FROM tb_shop_gram LIMIT 1").Scan(&counted).Error; err != nil {
		return 0, translate(err)
	}
	if err := db.Raw("SELECT 1 FROM tb_shop_bigram LIMIT 1").Scan(&indexed).Error; err != nil {
		return 0, translate(err)
	}
	if len(counted) == 0 && len(indexed) > 0 {
		if err := d.recountGrams(ctx); err != nil {
			return 0, err
		}
	}
	var last int64
	total := 0
	for {
		var rows []struct {
			ID   int64
			Name string
		}
		err := db.Raw(`SELECT id, name FROM tb_shop s WHERE id > ? AND NOT EXISTS
			(SELECT 1 FROM tb_shop_bigram g WHERE g.shop_id = s.id) ORDER BY id LIMIT 500`, last).Scan(&rows).Error
		if err != nil {
			return total, translate(err)
		}
		if len(rows) == 0 {
			if total > 0 {
				return total, d.recountGrams(ctx)
			}
			return total, nil
		}
		names := make(map[int64]string, len(rows))
		for _, r := range rows {
			names[r.ID] = r.Name
			last = max(last, r.ID)
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return insertGrams(tx, names) }); err != nil {
			return total, translate(err)
		}
		total += len(rows)
	}
}

// recountGrams sets every bigram's count from the index (after a
// backfill, which may race another instance's: the counts then come from
// the entries, not from who added them).
func (d *DB) recountGrams(ctx context.Context) error {
	upsert := " ON DUPLICATE KEY UPDATE shops = VALUES(shops)"
	if d.Embedded {
		upsert = " ON CONFLICT (gram) DO UPDATE SET shops = excluded.shops"
	}
	// WHERE true: SQLite's upsert after a SELECT needs a WHERE.
	err := d.Gorm.WithContext(ctx).Exec("INSERT INTO tb_shop_gram (gram, shops) SELECT gram, COUNT(*) FROM tb_shop_bigram WHERE true GROUP BY gram" + upsert).Error
	return translate(err)
}

// searchShops returns at most limit shops whose lower-cased name contains
// the lower-cased name, in name order, then id order: the first matches
// by id among the candidates the index gives (searchCandidates).
func (r *Shops) searchShops(ctx context.Context, name string, limit int) ([]model.Shop, error) {
	q := strings.ToLower(name)
	qr := []rune(q)
	db := r.db.WithContext(ctx)
	var ids []int64
	var err error
	if len(qr) == 1 {
		ids, err = r.searchOneChar(db, q, limit)
	} else {
		ids, err = r.searchGrams(db, q, qr, limit)
	}
	if err != nil {
		return nil, translate(err)
	}
	if len(ids) == 0 {
		return []model.Shop{}, nil
	}
	var out []model.Shop
	if err := db.Where("id IN ?", ids).Order("name").Order("id").Find(&out).Error; err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// candidate is a shop the index named, with its name to check.
type candidate struct {
	ID   int64
	Name string
}

// matches keeps the candidates whose name contains q, up to limit, and
// reports whether limit is reached.
func matches(ids []int64, cands []candidate, q string, limit int) ([]int64, bool) {
	for _, c := range cands {
		if strings.Contains(strings.ToLower(c.Name), q) {
			ids = append(ids, c.ID)
			if len(ids) >= limit {
				return ids, true
			}
		}
	}
	return ids, false
}

// searchGrams drives the search from the query's rarest bigram (by the
// counts of tb_shop_gram): its index entries in shop id order, a chunk at
// a time, each shop's name checked, until limit matches or
// SearchCandidates shops. A bigram no shop holds answers at once.
func (r *Shops) searchGrams(db *gorm.DB, q string, qr []rune, limit int) ([]int64, error) {
	grams := queryGrams(qr)
	var sb strings.Builder
	args := make([]any, 0, len(grams))
	for i, g := range grams {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(" ?")
		args = append(args, []byte(g))
	}
	var counts []struct {
		Gram  []byte
		Shops int
	}
	if err := db.Raw("SELECT gram, shops FROM tb_shop_gram WHERE gram IN ("+sb.String()+")", args...).Scan(&counts).Error; err != nil {
		return nil, err
	}
	if len(counts) < len(grams) {
		return nil, nil // a bigram no shop has held
	}
	driver, least := "", -1
	for _, c := range counts {
		if least < 0 || c.Shops < least {
			driver, least = string(c.Gram), c.Shops
		}
	}
	if least <= 0 {
		return nil, nil
	}
	var ids []int64
	var after int64
	next := min(searchChunk, 2*limit)
	for read := 0; read < SearchCandidates; {
		chunk := min(next, SearchCandidates-read)
		read += chunk
		var cands []candidate
		err := db.Raw(SearchChunkSQL, []byte(driver), after, chunk).Scan(&cands).Error
		if err != nil {
			return nil, err
		}
		var full bool
		if ids, full = matches(ids, cands, q, limit); full || len(cands) < chunk {
			return ids, nil
		}
		after = cands[len(cands)-1].ID
		next = min(searchChunk, 2*chunk)
	}
	return ids, nil
}

// SearchChunkSQL reads the next candidates of a search: the shops after a
// shop id that hold a bigram, in id order, with their names. Its
// arguments are the bigram (bytes), the id and the chunk's size. It reads
// the range of tb_shop_bigram's primary key (gram, shop_id) and each
// shop's row by its primary key (TestShopSearchExplain).
const SearchChunkSQL = `SELECT s.id, s.name FROM tb_shop_bigram g JOIN tb_shop s ON s.id = g.shop_id
	WHERE g.gram = ? AND g.shop_id > ? ORDER BY g.shop_id LIMIT ?`

// searchOneChar is the bounded fallback of a one-character query: the
// first SearchCandidates index entries of the bigrams it begins (its last
// character alone included, so a name ending with it is found), in the
// index's order (bigram, then shop id); not every shop holding a common
// character is among them.
func (r *Shops) searchOneChar(db *gorm.DB, q string, limit int) ([]int64, error) {
	lo := []byte(q)
	hi := append([]byte(nil), lo...)
	hi[len(hi)-1]++ // a UTF-8 sequence's last byte is at most 0xBF: no carry
	// A few entries first: the shops of one bigram come in id order, so
	// they hold limit shops unless the names repeat the character.
	var uniq []int64
	for _, n := range []int{min(SearchCandidates, 4*limit), SearchCandidates} {
		var raw []int64
		if err := db.Raw(`SELECT shop_id FROM tb_shop_bigram WHERE gram >= ? AND gram < ? LIMIT ?`,
			lo, hi, n).Scan(&raw).Error; err != nil {
			return nil, err
		}
		seen := make(map[int64]bool, len(raw))
		uniq = uniq[:0]
		for _, id := range raw {
			if !seen[id] {
				seen[id] = true
				uniq = append(uniq, id)
			}
		}
		if len(uniq) >= limit || len(raw) < n {
			break
		}
	}
	slices.Sort(uniq)
	var ids []int64
	for start, size := 0, min(searchChunk, 2*limit); start < len(uniq); start, size = start+size, min(searchChunk, 2*size) {
		var cands []candidate
		chunk := uniq[start:min(len(uniq), start+size)]
		if err := db.Raw(`SELECT id, name FROM tb_shop WHERE id IN ? ORDER BY id`, chunk).Scan(&cands).Error; err != nil {
			return nil, err
		}
		var full bool
		if ids, full = matches(ids, cands, q, limit); full {
			break
		}
	}
	return ids, nil
}
