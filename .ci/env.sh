#!/usr/bin/env bash
# .ci/env.sh — source it (`. .ci/env.sh`) to point the product and its
# integration tests at the local services started by .ci/services.sh.
# Values already set in the environment win.

export PATH="/usr/local/go/bin:${PATH}"
export SECKILL_MYSQL_DSN="${SECKILL_MYSQL_DSN:-seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=Local}"
export SECKILL_REDIS_ADDR="${SECKILL_REDIS_ADDR:-127.0.0.1:6379}"
export SECKILL_REDLOCK_ADDRS="${SECKILL_REDLOCK_ADDRS:-127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382}"
export SECKILL_ZK_ADDRS="${SECKILL_ZK_ADDRS:-127.0.0.1:2181}"
# The Sentinel-managed Redis of .ci/services.sh, for the Sentinel test only:
# SECKILL_REDIS_SENTINEL_ADDRS itself stays unset (with SECKILL_REDIS_ADDR it
# would be a start-up error); the test sets it for the app it starts.
export SECKILL_TEST_SENTINEL_ADDRS="${SECKILL_TEST_SENTINEL_ADDRS:-127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392}"
export SECKILL_TEST_SENTINEL_MASTER="${SECKILL_TEST_SENTINEL_MASTER:-seckill}"
# The Redis Cluster of .ci/services.sh, for the tests that run on it too:
# SECKILL_REDIS_CLUSTER_ADDRS itself stays unset (with SECKILL_REDIS_ADDR
# it would be a start-up error); tests set it for the apps they start.
export SECKILL_TEST_CLUSTER_ADDRS="${SECKILL_TEST_CLUSTER_ADDRS:-127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003}"
