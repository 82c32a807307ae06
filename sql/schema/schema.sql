-- seckill schema for MySQL 8 / MariaDB 10.6+. Applied idempotently at start
-- and by `seckill migrate`: every statement is CREATE ... IF NOT EXISTS;
-- columns and indexes added to an existing table are added by Migrate
-- (repository/sqlstore/db.go) when missing. tb_voucher_order's status is Heima's:
-- 1 unpaid, 2 paid, 3 used (redeemed at the shop, use_time), 4 cancelled
-- (cancel_reason 'buyer' or 'timeout'), 5 refunding (the buyer asked), 6
-- refunded (refund_time, refund_reason); unit_back says a refund put the
-- unit back on sale (asked while the sale lasted). redeem_code is the paid order's
-- code for the shop's counter, made on its owner's first read; unique
-- (uk_redeem_code, created by Migrate).
-- Its create_time, pay_time and cancel_time keep milliseconds: the pay
-- window (create_time + SECKILL_PAY_TIMEOUT) is exact to the millisecond.
-- Migrate widens these columns of an older table, keeping its rows.
-- Statements are separated by a line ending in ";".

CREATE TABLE IF NOT EXISTS tb_user (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  phone       VARCHAR(11)  NOT NULL,
  password    VARCHAR(128) NOT NULL DEFAULT '',
  nick_name   VARCHAR(32)  NOT NULL DEFAULT '',
  icon        VARCHAR(255) NOT NULL DEFAULT '',
  role        VARCHAR(16)  NOT NULL DEFAULT 'user',
  create_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uniqe_key_phone (phone)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS tb_voucher (
  id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  shop_id      BIGINT UNSIGNED NOT NULL,
  title        VARCHAR(255) NOT NULL,
  sub_title    VARCHAR(255) NOT NULL DEFAULT '',
  rules        VARCHAR(1024) NOT NULL DEFAULT '',
  pay_value    BIGINT UNSIGNED NOT NULL,
  actual_value BIGINT NOT NULL,
  type         TINYINT UNSIGNED NOT NULL DEFAULT 0,
  status       TINYINT UNSIGNED NOT NULL DEFAULT 1,
  use_days     VARCHAR(16) NOT NULL DEFAULT '',
  use_until    VARCHAR(10) NOT NULL DEFAULT '',
  create_time  TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time  TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  KEY idx_shop (shop_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS tb_seckill_voucher (
  voucher_id    BIGINT UNSIGNED NOT NULL,
  stock         INT NOT NULL,
  initial_stock INT NOT NULL,
  create_time   TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  begin_time    DATETIME NOT NULL,
  end_time      DATETIME NOT NULL,
  stock_buckets INT NOT NULL DEFAULT 1,
  waiting_room  TINYINT NOT NULL DEFAULT 0,
  update_time   TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (voucher_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS tb_voucher_order (
  id          BIGINT NOT NULL,
  user_id     BIGINT UNSIGNED NOT NULL,
  voucher_id  BIGINT UNSIGNED NOT NULL,
  pay_type    TINYINT UNSIGNED NOT NULL DEFAULT 1,
  status      TINYINT UNSIGNED NOT NULL DEFAULT 1,
  fence_token BIGINT NULL,
  create_time TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  pay_time    TIMESTAMP(3) NULL,
  use_time    TIMESTAMP NULL,
  refund_time TIMESTAMP NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  pay_amount    BIGINT NULL,
  pay_key       VARCHAR(64) NULL,
  cancel_time   TIMESTAMP(3) NULL,
  cancel_reason VARCHAR(16) NOT NULL DEFAULT '',
  giveback_due  TINYINT NOT NULL DEFAULT 0,
  refund_reason VARCHAR(32) NOT NULL DEFAULT '',
  redeem_code   VARCHAR(16) NULL,
  unit_back     TINYINT NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  KEY idx_voucher (voucher_id),
  KEY idx_status_time (status, create_time),
  KEY idx_giveback (giveback_due),
  UNIQUE KEY uk_user_voucher (user_id, voucher_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The newest fencing token used per lock key (SECKILL_FENCING=on): an order
-- transaction carrying an older token is refused.
CREATE TABLE IF NOT EXISTS tb_lock_fence (
  lock_key    VARCHAR(128) NOT NULL,
  token       BIGINT NOT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (lock_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Named values of the service. Async mode keeps its epoch here (name
-- 'async_epoch'), also stored in Redis as seckill:epoch: equal values mean
-- Redis still holds the state the service put there.
CREATE TABLE IF NOT EXISTS tb_seckill_meta (
  name        VARCHAR(64)  NOT NULL,
  value       VARCHAR(255) NOT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The outcome of each order of async mode (SECKILL_ORDER_MODE=async), the
-- one arbiter between writing an order and giving it up: a consumer inserts
-- 'written' in the transaction that writes the order, and 'dead' (with the
-- reason) on its own before the dead-letter script gives the stock back.
-- The primary key lets exactly one outcome win; the loser acknowledges the
-- entry (written) or finishes the dead letter (dead), never both.
CREATE TABLE IF NOT EXISTS tb_order_outcome (
  order_id    BIGINT NOT NULL,
  outcome     VARCHAR(8)  NOT NULL,
  reason      VARCHAR(64) NOT NULL DEFAULT '',
  attempts    INT NOT NULL DEFAULT 0,
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The course's shop (GET /shop/:id, POST /shop, PUT /shop). images is a
-- comma-separated list of image paths, as the course stores it; x and y
-- are longitude and latitude; score is 1 to 5 points times ten. A
-- voucher's shop_id must name a row here (checked by the service when a
-- voucher is published; shops are never deleted).
CREATE TABLE IF NOT EXISTS tb_shop (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  name        VARCHAR(128)  NOT NULL,
  type_id     BIGINT UNSIGNED NOT NULL,
  images      VARCHAR(1024) NOT NULL DEFAULT '',
  area        VARCHAR(128)  NOT NULL DEFAULT '',
  address     VARCHAR(255)  NOT NULL,
  x           DOUBLE        NOT NULL,
  y           DOUBLE        NOT NULL,
  avg_price   BIGINT UNSIGNED NOT NULL DEFAULT 0,
  sold        INT UNSIGNED  NOT NULL DEFAULT 0,
  comments    INT UNSIGNED  NOT NULL DEFAULT 0,
  score       TINYINT UNSIGNED NOT NULL DEFAULT 0,
  open_hours  VARCHAR(32)   NOT NULL DEFAULT '',
  create_time TIMESTAMP     NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP     NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  KEY idx_type (type_id),
  -- The name order of a search's answer; an empty search lists by id
  -- (added by Migrate to an existing table).
  KEY idx_shop_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The shop search's index (GET /shop/list?name=): every bigram (two
-- consecutive characters) of each shop's lower-cased name, and its last
-- character alone, as UTF-8 bytes (byte order, no collation). A search for
-- "示范" or "tea" reads the entries of its rarest bigram (tb_shop_gram
-- counts the shops of each) and checks those shops' names; one character
-- reads the range of the bigrams it begins. MariaDB has no ngram FULLTEXT
-- parser (MySQL's), so the store keeps both tables itself, in the
-- transaction that creates or renames the shop; Migrate fills them for the
-- shops that have no entry (shops written before the index existed).
CREATE TABLE IF NOT EXISTS tb_shop_bigram (
  gram    VARBINARY(8)    NOT NULL,
  shop_id BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (gram, shop_id),
  KEY idx_bigram_shop (shop_id)
) ENGINE=InnoDB;

-- How many shops hold each bigram of tb_shop_bigram, kept in the same
-- transactions: a search starts from its rarest bigram.
CREATE TABLE IF NOT EXISTS tb_shop_gram (
  gram  VARBINARY(8) NOT NULL,
  shops INT          NOT NULL,
  PRIMARY KEY (gram)
) ENGINE=InnoDB;

-- Token revocations: every token of user_id issued (iat) before not_before
-- (Unix seconds) is refused (`seckill revoke`). One row per revoked user.
CREATE TABLE IF NOT EXISTS tb_token_revocation (
  user_id     BIGINT UNSIGNED NOT NULL,
  not_before  BIGINT NOT NULL,
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A trade opened at a pay provider (Alipay, WeChat Pay) for an order, one
-- per attempt; out_trade_no is "<order id>_<attempt>". state: 1 open,
-- 2 paid, 3 closed (at the provider, or never created there), 4 unknown
-- (the provider stayed unreachable past the bound; the order was
-- cancelled and a later payment is refunded). open_for is
-- "<order id>:<provider>" while open, so an order has one open trade per
-- provider. The amount is in fen. refund_state: 0 none, 1 due, 2 processing
-- at the provider, 3 done; refund_next is when an owed refund is tried
-- again (backoff). Only a verified notification, or a query that finds the
-- trade paid, sets state 2 and pays the order (docs/payments.md).
CREATE TABLE IF NOT EXISTS tb_pay_trade (
  out_trade_no      VARCHAR(64) NOT NULL,
  order_id          BIGINT      NOT NULL,
  provider          VARCHAR(16) NOT NULL,
  amount            BIGINT      NOT NULL,
  state             TINYINT     NOT NULL DEFAULT 1,
  open_for          VARCHAR(48) NULL,
  qr_code           VARCHAR(512) NOT NULL DEFAULT '',
  pay_url           TEXT        NULL,
  provider_trade_no VARCHAR(64) NOT NULL DEFAULT '',
  create_time       DATETIME(3) NOT NULL,
  expire_time       DATETIME(3) NOT NULL,
  pay_time          DATETIME(3) NULL,
  refund_no         VARCHAR(64) NOT NULL DEFAULT '',
  refund_reason     VARCHAR(32) NOT NULL DEFAULT '',
  refund_state      TINYINT     NOT NULL DEFAULT 0,
  refund_attempts   INT         NOT NULL DEFAULT 0,
  refund_next       DATETIME(3) NULL,
  refund_time       DATETIME(3) NULL,
  refund_note       VARCHAR(255) NOT NULL DEFAULT '',
  PRIMARY KEY (out_trade_no),
  UNIQUE KEY uk_trade_open (open_for),
  KEY idx_trade_order (order_id),
  KEY idx_trade_state (state, expire_time),
  KEY idx_trade_refund (refund_state, refund_next)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A mismatch between a pay provider and the orders, found by the
-- reconciliation (docs/payments.md, "Reconciliation"): kind says what,
-- action what to do. bill_date is the Beijing day of the bill (or of the
-- run, for the kinds that are no bill's). One row per provider, kind,
-- trade and day: reruns and several instances record it once.
CREATE TABLE IF NOT EXISTS tb_pay_mismatch (
  id            BIGINT      NOT NULL AUTO_INCREMENT,
  provider      VARCHAR(16) NOT NULL,
  kind          VARCHAR(32) NOT NULL,
  out_trade_no  VARCHAR(64) NOT NULL,
  out_refund_no VARCHAR(64) NOT NULL DEFAULT '',
  order_id      BIGINT      NULL,
  voucher_id    BIGINT      NULL,
  amount        BIGINT      NOT NULL DEFAULT 0,
  detail        VARCHAR(512) NOT NULL DEFAULT '',
  action        VARCHAR(512) NOT NULL DEFAULT '',
  bill_date     CHAR(10)    NOT NULL,
  first_seen    DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_mismatch (provider, kind, out_trade_no, bill_date),
  KEY idx_mismatch_voucher (voucher_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The shops' staff (role 'staff' in tb_user): each staff member is bound to
-- one shop and redeems its vouchers (POST /shop/:shopId/redeem). The row is
-- read on every redemption, so removing it takes effect at once.
CREATE TABLE IF NOT EXISTS tb_shop_staff (
  user_id     BIGINT UNSIGNED NOT NULL,
  shop_id     BIGINT UNSIGNED NOT NULL,
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (user_id),
  KEY idx_staff_shop (shop_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
