package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"seckill/model"
	"seckill/sql/schema"
)

// DB is the database handle and its dialect.
type DB struct {
	Gorm     *gorm.DB
	Embedded bool // the SQLite file under the data dir
}

// OpenMySQL opens MySQL/MariaDB with dsn and checks that it answers.
func OpenMySQL(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: %w", err)
	}
	cfg.ParseTime = true
	// Client-side interpolation: one round trip per statement, no
	// PREPARE/CLOSE pair per statement per transaction.
	cfg.InterpolateParams = true
	// Rows affected must mean rows changed. The fence upsert reads 0 as
	// "stale token". clientFoundRows=true would report the matched row.
	cfg.ClientFoundRows = false
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	g, err := gorm.Open(gormmysql.New(gormmysql.Config{DSNConfig: cfg}), &gorm.Config{
		Logger:                 gormlogger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: open: %w", err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(64)
	sqlDB.SetMaxIdleConns(64)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: %s unreachable: %w", cfg.Addr, err)
	}
	return &DB{Gorm: g}, nil
}

// OpenLockDB opens a pool of its own for the mysql lock backend. Every held
// GET_LOCK pins a connection. Sharing the order transactions' pool could
// starve them. Each request would hold a lock connection while waiting for
// a transaction connection.
func OpenLockDB(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: %w", err)
	}
	db.SetMaxOpenConns(256)
	db.SetMaxIdleConns(64)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: lock pool: %w", err)
	}
	return db, nil
}

// OpenEmbedded opens (creating) the SQLite file seckill.db under dir. WAL, a
// long busy timeout, immediate transactions and one connection per process
// let `serve`, `tokens` and `migrate` share the file.
func OpenEmbedded(ctx context.Context, dir string) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("SECKILL_DATA_DIR: %w", err)
	}
	path := filepath.Join(dir, "seckill.db")
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)&_pragma=foreign_keys(1)&_txlock=immediate&_time_format=sqlite"
	g, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: gormlogger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("embedded database %s: %w", path, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(1)
	if err := sqlDB.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("embedded database %s: %w", path, err)
	}
	return &DB{Gorm: g, Embedded: true}, nil
}

// Migrate applies the schema idempotently.
func (d *DB) Migrate(ctx context.Context) error {
	stmts := schema.MySQL()
	if d.Embedded {
		stmts = schema.SQLite()
	}
	for _, s := range stmts {
		if err := d.Gorm.WithContext(ctx).Exec(s).Error; err != nil {
			return fmt.Errorf("apply schema: %w", translate(err))
		}
	}
	// Columns added since a table was first created (CREATE TABLE IF NOT
	// EXISTS leaves an existing table as it is).
	for _, c := range addedColumns {
		m := d.Gorm.WithContext(ctx).Migrator()
		if m.HasColumn(c.table, c.column) {
			continue
		}
		if err := d.Gorm.WithContext(ctx).Exec("ALTER TABLE " + c.table + " ADD COLUMN " + c.column + " " + c.def).Error; err != nil {
			return fmt.Errorf("apply schema: add %s.%s: %w", c.table, c.column, translate(err))
		}
	}
	if err := d.widenTimes(ctx); err != nil {
		return err
	}
	for _, ix := range addedIndexes {
		m := d.Gorm.WithContext(ctx).Migrator()
		if m.HasIndex(ix.table, ix.name) {
			continue
		}
		kind := "CREATE INDEX "
		if ix.unique {
			kind = "CREATE UNIQUE INDEX "
		}
		err := d.Gorm.WithContext(ctx).Exec(kind + ix.name + " ON " + ix.table + " (" + ix.columns + ")").Error
		if err != nil && !m.HasIndex(ix.table, ix.name) { // another instance may have won
			return fmt.Errorf("apply schema: index %s.%s: %w", ix.table, ix.name, translate(err))
		}
	}
	// The shop search's index of the shops written before it.
	if _, err := d.BackfillShopGrams(ctx); err != nil {
		return fmt.Errorf("apply schema: index the shops' names (tb_shop_bigram): %w", err)
	}
	return nil
}

// addedIndexes are the indexes added after their table first shipped.
// idx_status_time finds expired unpaid orders without a full scan.
// idx_giveback finds the Redis give-backs still due. idx_shop_name orders
// a search's shops by name. uk_redeem_code keeps redemption codes unique
// and finds an order by its code.
var addedIndexes = []struct {
	table, name, columns string
	unique               bool
}{
	{"tb_voucher_order", "idx_status_time", "status, create_time", false},
	{"tb_voucher_order", "idx_giveback", "giveback_due", false},
	{"tb_shop", "idx_shop_name", "name", false},
	{"tb_voucher_order", "uk_redeem_code", "redeem_code", true},
}

// addedColumns are the columns of the schema files added after their table
// first shipped, with their definitions (the same in both dialects).
var addedColumns = []struct{ table, column, def string }{
	{"tb_seckill_voucher", "stock_buckets", "INT NOT NULL DEFAULT 1"},
	{"tb_seckill_voucher", "waiting_room", "TINYINT NOT NULL DEFAULT 0"},
	{"tb_voucher_order", "pay_amount", "BIGINT NULL"},
	{"tb_voucher_order", "pay_key", "VARCHAR(64) NULL"},
	{"tb_voucher_order", "cancel_time", "TIMESTAMP(3) NULL"},
	{"tb_voucher_order", "cancel_reason", "VARCHAR(16) NOT NULL DEFAULT ''"},
	{"tb_voucher_order", "refund_reason", "VARCHAR(32) NOT NULL DEFAULT ''"},
	{"tb_voucher_order", "giveback_due", "TINYINT NOT NULL DEFAULT 0"},
	{"tb_voucher_order", "redeem_code", "VARCHAR(16) NULL"},
	{"tb_voucher_order", "unit_back", "TINYINT NOT NULL DEFAULT 0"},
	{"tb_pay_trade", "refund_note", "VARCHAR(255) NOT NULL DEFAULT ''"},
	{"tb_voucher", "use_days", "VARCHAR(16) NOT NULL DEFAULT ''"},
	{"tb_voucher", "use_until", "VARCHAR(10) NOT NULL DEFAULT ''"},
}

// MaxOrderSequence is the largest sequence (low 32 bits) of an order id
// in [from, to): 0 when there is none.
func (d *DB) MaxOrderSequence(ctx context.Context, from, to int64) (int64, error) {
	var maxSeq int64
	err := d.Gorm.WithContext(ctx).Raw(
		"SELECT COALESCE(MAX(id & 4294967295), 0) FROM tb_voucher_order WHERE id >= ? AND id < ?",
		from, to).Scan(&maxSeq).Error
	return maxSeq, translate(err)
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return model.Unavailable(err)
	}
	return nil
}

// Close closes the pool.
func (d *DB) Close() error {
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// isUniqueViolation reports a duplicate-key error of MySQL (1062) or SQLite.
func isUniqueViolation(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	return errors.Is(err, gorm.ErrDuplicatedKey) || strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// translate maps driver errors to model errors: unreachable or timed-out
// dependencies become model.ErrUnavailable. The rest are wrapped as they are
// (the handler turns them into INTERNAL without leaking their text).
func translate(err error) error {
	if err == nil {
		return nil
	}
	var netErr net.Error
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.As(err, &netErr):
		return model.Unavailable(err)
	case errors.Is(err, sql.ErrTxDone):
		// database/sql rolled the transaction back when its context
		// ended. The next statement in it reports only this.
		return model.Unavailable(err)
	case errors.As(err, &me) && (isTransient(me.Number)):
		return model.Unavailable(err)
	case strings.Contains(err.Error(), "database is locked"), strings.Contains(err.Error(), "connection refused"):
		return model.Unavailable(err)
	}
	return fmt.Errorf("database: %w", err)
}

// takeOne reads the one row of T whose column is value. No row is
// notFound; other errors are translated.
func takeOne[T any](ctx context.Context, db *gorm.DB, column string, value any, notFound error) (*T, error) {
	var row T
	err := db.WithContext(ctx).Where(column+" = ?", value).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, translate(err)
	}
	return &row, nil
}

// isTransient reports the MySQL/MariaDB errors that say the server cannot
// serve now. They do not say the request is wrong. They are too many
// connections (1040), lock wait timeout (1205) and deadlock (1213). So are
// shutting down (1053), query interrupted (1317) and connection killed
// (1927). So are gone away (2006), lost (2013) and cannot connect (2002,
// 2003).
func isTransient(n uint16) bool {
	switch n {
	case 1040, 1205, 1213, 1053, 1317, 1927, 2002, 2003, 2006, 2013:
		return true
	}
	return false
}
