#!/usr/bin/env bash
# .ci/env.sh — source it (`. .ci/env.sh`) to point the product and its
# integration tests at the local services started by .ci/services.sh.
# Values already set in the environment win.

export PATH="/usr/local/go/bin:${PATH}"
export SECKILL_MYSQL_DSN="${SECKILL_MYSQL_DSN:-seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=Local}"
export SECKILL_REDIS_ADDR="${SECKILL_REDIS_ADDR:-127.0.0.1:6379}"
export SECKILL_REDLOCK_ADDRS="${SECKILL_REDLOCK_ADDRS:-127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382}"
export SECKILL_ZK_ADDRS="${SECKILL_ZK_ADDRS:-127.0.0.1:2181}"
