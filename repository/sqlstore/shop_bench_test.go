package sqlstore

import (
	"context"
	"fmt"
	"strings"
)

// FillShops inserts n shops named name(i), 1,000 a statement, then indexes
// their names as Migrate does for shops written before the index.
func FillShops(ctx context.Context, db *DB, n int, name func(i int) string) error {
	for start := 0; start < n; start += 1000 {
		var sb strings.Builder
		var args []any
		for i := start; i < min(n, start+1000); i++ {
			if i > start {
				sb.WriteString(",")
			}
			sb.WriteString("(?, 1, 'a', 0, 0)")
			args = append(args, name(i))
		}
		if err := db.Gorm.WithContext(ctx).Exec("INSERT INTO tb_shop (name, type_id, address, x, y) VALUES "+sb.String(), args...).Error; err != nil {
			return err
		}
	}
	_, err := db.BackfillShopGrams(ctx)
	return err
}

// ExplainSearch is MariaDB's EXPLAIN of a search's candidate read for the
// bigram gram: a line "<table> <type> <key> rows=<n>" per table.
func ExplainSearch(ctx context.Context, db *DB, gram string) (string, error) {
	rows, err := db.Gorm.WithContext(ctx).Raw("EXPLAIN "+SearchChunkSQL, []byte(gram), 0, 100).Rows()
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		m := map[string]string{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case []byte:
				m[c] = string(v)
			case nil:
				m[c] = "NULL"
			default:
				m[c] = fmt.Sprint(v)
			}
		}
		fmt.Fprintf(&out, "%s %s %s rows=%s %s\n", m["table"], m["type"], m["key"], m["rows"], m["Extra"])
	}
	return out.String(), rows.Err()
}
