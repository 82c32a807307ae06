// Package schema embeds the SQL schema of the seckill service: schema.sql for
// MySQL/MariaDB and schema_sqlite.sql for the embedded database.
package schema

import (
	_ "embed"
	"strings"
)

//go:embed schema.sql
var mysqlSchema string

//go:embed schema_sqlite.sql
var sqliteSchema string

// MySQL returns the statements of schema.sql, in order.
func MySQL() []string { return Statements(mysqlSchema) }

// SQLite returns the statements of schema_sqlite.sql, in order.
func SQLite() []string { return Statements(sqliteSchema) }

// Statements splits a schema file into statements: a statement ends with a
// line ending in ";". Comment lines starting with "--" are dropped.
func Statements(src string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			stmt := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			out = append(out, stmt)
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
