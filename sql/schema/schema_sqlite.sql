-- seckill schema for the embedded database (SQLite dialect), the same tables
-- and keys as schema.sql. Used only when SECKILL_MYSQL_DSN is empty.

CREATE TABLE IF NOT EXISTS tb_user (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  phone       TEXT NOT NULL UNIQUE,
  password    TEXT NOT NULL DEFAULT '',
  nick_name   TEXT NOT NULL DEFAULT '',
  icon        TEXT NOT NULL DEFAULT '',
  role        TEXT NOT NULL DEFAULT 'user',
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS tb_voucher (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  shop_id      INTEGER NOT NULL,
  title        TEXT NOT NULL,
  sub_title    TEXT NOT NULL DEFAULT '',
  rules        TEXT NOT NULL DEFAULT '',
  pay_value    INTEGER NOT NULL,
  actual_value INTEGER NOT NULL,
  type         INTEGER NOT NULL DEFAULT 0,
  status       INTEGER NOT NULL DEFAULT 1,
  use_days     TEXT NOT NULL DEFAULT '',
  use_until    TEXT NOT NULL DEFAULT '',
  create_time  DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time  DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX IF NOT EXISTS idx_voucher_shop ON tb_voucher (shop_id);

CREATE TABLE IF NOT EXISTS tb_seckill_voucher (
  voucher_id    INTEGER PRIMARY KEY,
  stock         INTEGER NOT NULL,
  initial_stock INTEGER NOT NULL,
  create_time   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  begin_time    DATETIME NOT NULL,
  end_time      DATETIME NOT NULL,
  stock_buckets INTEGER NOT NULL DEFAULT 1,
  waiting_room  INTEGER NOT NULL DEFAULT 0,
  update_time   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS tb_voucher_order (
  id          INTEGER PRIMARY KEY,
  user_id     INTEGER NOT NULL,
  voucher_id  INTEGER NOT NULL,
  pay_type    INTEGER NOT NULL DEFAULT 1,
  status      INTEGER NOT NULL DEFAULT 1,
  fence_token INTEGER NULL,
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  pay_time    DATETIME NULL,
  use_time    DATETIME NULL,
  refund_time DATETIME NULL,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  pay_amount    INTEGER NULL,
  pay_key       TEXT NULL,
  cancel_time   DATETIME NULL,
  cancel_reason TEXT NOT NULL DEFAULT '',
  giveback_due  INTEGER NOT NULL DEFAULT 0,
  refund_reason TEXT NOT NULL DEFAULT '',
  redeem_code   TEXT NULL,
  unit_back     INTEGER NOT NULL DEFAULT 0,
  UNIQUE (user_id, voucher_id)
);

CREATE INDEX IF NOT EXISTS idx_order_voucher ON tb_voucher_order (voucher_id);

-- idx_status_time, idx_giveback and uk_redeem_code are created by Migrate (repository/sqlstore/db.go)
-- once the columns they cover exist on a table created before them.

CREATE TABLE IF NOT EXISTS tb_lock_fence (
  lock_key    TEXT PRIMARY KEY,
  token       INTEGER NOT NULL,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS tb_seckill_meta (
  name        TEXT PRIMARY KEY,
  value       TEXT NOT NULL,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS tb_order_outcome (
  order_id    INTEGER PRIMARY KEY,
  outcome     TEXT NOT NULL,
  reason      TEXT NOT NULL DEFAULT '',
  attempts    INTEGER NOT NULL DEFAULT 0,
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS tb_shop (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL,
  type_id     INTEGER NOT NULL,
  images      TEXT NOT NULL DEFAULT '',
  area        TEXT NOT NULL DEFAULT '',
  address     TEXT NOT NULL,
  x           REAL NOT NULL,
  y           REAL NOT NULL,
  avg_price   INTEGER NOT NULL DEFAULT 0,
  sold        INTEGER NOT NULL DEFAULT 0,
  comments    INTEGER NOT NULL DEFAULT 0,
  score       INTEGER NOT NULL DEFAULT 0,
  open_hours  TEXT NOT NULL DEFAULT '',
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX IF NOT EXISTS idx_shop_type ON tb_shop (type_id);
CREATE INDEX IF NOT EXISTS idx_shop_name ON tb_shop (name);

-- The shop search's index: see schema.sql.
CREATE TABLE IF NOT EXISTS tb_shop_bigram (
  gram    BLOB    NOT NULL,
  shop_id INTEGER NOT NULL,
  PRIMARY KEY (gram, shop_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS idx_bigram_shop ON tb_shop_bigram (shop_id);

CREATE TABLE IF NOT EXISTS tb_shop_gram (
  gram  BLOB    NOT NULL PRIMARY KEY,
  shops INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tb_token_revocation (
  user_id     INTEGER PRIMARY KEY,
  not_before  INTEGER NOT NULL,
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- Trades at the pay providers: see schema.sql.
CREATE TABLE IF NOT EXISTS tb_pay_trade (
  out_trade_no      TEXT PRIMARY KEY,
  order_id          INTEGER NOT NULL,
  provider          TEXT NOT NULL,
  amount            INTEGER NOT NULL,
  state             INTEGER NOT NULL DEFAULT 1,
  open_for          TEXT NULL UNIQUE,
  qr_code           TEXT NOT NULL DEFAULT '',
  pay_url           TEXT NULL,
  provider_trade_no TEXT NOT NULL DEFAULT '',
  create_time       DATETIME NOT NULL,
  expire_time       DATETIME NOT NULL,
  pay_time          DATETIME NULL,
  refund_no         TEXT NOT NULL DEFAULT '',
  refund_reason     TEXT NOT NULL DEFAULT '',
  refund_state      INTEGER NOT NULL DEFAULT 0,
  refund_attempts   INTEGER NOT NULL DEFAULT 0,
  refund_next       DATETIME NULL,
  refund_time       DATETIME NULL,
  refund_note       TEXT NOT NULL DEFAULT ''
);

CREATE INDEX IF NOT EXISTS idx_trade_order ON tb_pay_trade (order_id);
CREATE INDEX IF NOT EXISTS idx_trade_state ON tb_pay_trade (state, expire_time);
CREATE INDEX IF NOT EXISTS idx_trade_refund ON tb_pay_trade (refund_state, refund_next);

CREATE TABLE IF NOT EXISTS tb_pay_mismatch (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  provider      TEXT NOT NULL,
  kind          TEXT NOT NULL,
  out_trade_no  TEXT NOT NULL,
  out_refund_no TEXT NOT NULL DEFAULT '',
  order_id      INTEGER NULL,
  voucher_id    INTEGER NULL,
  amount        INTEGER NOT NULL DEFAULT 0,
  detail        TEXT NOT NULL DEFAULT '',
  action        TEXT NOT NULL DEFAULT '',
  bill_date     TEXT NOT NULL,
  first_seen    DATETIME NOT NULL,
  UNIQUE (provider, kind, out_trade_no, bill_date)
);

CREATE INDEX IF NOT EXISTS idx_mismatch_voucher ON tb_pay_mismatch (voucher_id, id);

CREATE TABLE IF NOT EXISTS tb_shop_staff (
  user_id     INTEGER PRIMARY KEY,
  shop_id     INTEGER NOT NULL,
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX IF NOT EXISTS idx_staff_shop ON tb_shop_staff (shop_id);
