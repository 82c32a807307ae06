package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"seckill/model"
)

// The read-back of an order transaction whose commit's outcome is unknown,
// and the order keys it and the consumers read.

// readBackTimeout bounds the reads that resolve an order transaction of
// unknown outcome. It is long enough for a restarting database to come
// back. It is short enough not to hold the per-user lock much past a
// client's patience. That lock's lease is 10 s by default.
const readBackTimeout = 8 * time.Second

// outcomeUnknown reports an error after which an order transaction may have
// committed or not. Either the connection broke, or the context ended
// during a statement. A broken connection is a bad connection, EOF, a
// network error, or the server gone, killed or shutting down. A MySQL error
// about a statement, such as a duplicate key or a deadlock, means no
// commit.
func outcomeUnknown(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1927, 2006, 2013: // shutdown in progress, connection killed, gone away, lost
			return true
		}
		return false
	}
	if isRefusal(err) {
		return false
	}
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// readBack tells whether order o is in the database. It reads on a
// context detached from the request's and bounded by readBackTimeout,
// retrying while the database does not answer. On MySQL it is a locking
// read of the primary key. If the inserting transaction still runs on the
// server, the read waits for its commit or rollback: the answer is final.
func (r *OrderCommits) readBack(ctx context.Context, o *model.VoucherOrder) (bool, error) {
	q := lockingRead(r.db, "SELECT id, user_id, voucher_id FROM tb_voucher_order WHERE id = ?")
	var rows []orderKey
	if err := readUntilAnswered(ctx, r.db, func(db *gorm.DB) error {
		rows = nil
		return db.Raw(q, o.ID).Scan(&rows).Error
	}); err != nil {
		return false, err
	}
	return len(rows) == 1 && rows[0].same(o.UserID, o.VoucherID), nil
}

// lockingRead is query q as a shared-lock read on MySQL. SQLite has no
// such clause and serialises writers anyway.
func lockingRead(db *gorm.DB, q string) string {
	if db.Dialector.Name() == "sqlite" {
		return q
	}
	return q + " LOCK IN SHARE MODE"
}

// readUntilAnswered runs read on a context detached from ctx, bounded by
// readBackTimeout. It tries again, with a growing pause, while the database
// fails. When the time is up it returns the last error.
func readUntilAnswered(ctx context.Context, gdb *gorm.DB, read func(db *gorm.DB) error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := read(gdb.WithContext(rctx))
		if err == nil {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-rctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// orderKey is what identifies an order beyond its id.
type orderKey struct {
	ID        int64 `gorm:"column:id"`
	UserID    int64 `gorm:"column:user_id"`
	VoucherID int64 `gorm:"column:voucher_id"`
}

// same reports whether k is the order of the user and voucher.
func (k orderKey) same(userID, voucherID int64) bool {
	return k.UserID == userID && k.VoucherID == voucherID
}

// orderKeys reads through db (a transaction handle, or the pool) the
// orders among ids that exist, by id.
func orderKeys(db *gorm.DB, ids []int64) (map[int64]orderKey, error) {
	var rows []orderKey
	if err := db.Model(&model.VoucherOrder{}).Select("id, user_id, voucher_id").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	have := make(map[int64]orderKey, len(rows))
	for _, k := range rows {
		have[k.ID] = k
	}
	return have, nil
}
