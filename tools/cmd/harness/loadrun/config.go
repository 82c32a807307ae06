package loadrun

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ltConfig is one experiment's settings.
type ltConfig struct {
	Root                                   string
	Mode, Driver, Scenario, OrderMode      string
	Fencing, Setting, Out                  string
	LockTTL, CriticalDelay, RequestTimeout string
	Instances, BasePort, Users, Dups, VUs  int
	SpacingMS, Stock                       int
	Slow, Matrix, AllowBreach, SkipBuild   bool
	K6, JMeterHome, MySQLDSN, RedisAddr    string
	// Cluster: REDIS=cluster, the instances on the Redis Cluster of
	// SECKILL_TEST_CLUSTER_ADDRS (.ci/env.sh) instead of SECKILL_REDIS_ADDR.
	Cluster      bool
	ClusterAddrs string
	// Buckets: BUCKETS, the servers' SECKILL_STOCK_BUCKETS (async mode: the
	// voucher's Redis stock split in that many buckets).
	Buckets string
	// GroupCommit: GROUP_COMMIT (on), the servers'
	// SECKILL_SYNC_GROUP_COMMIT. The matrix turns it off: one process's
	// group committer serialises a voucher's commits, which would hide
	// what a weak lock lets through.
	GroupCommit string
	// The order's life: PAY_SHARE and CANCEL_SHARE of the buyers pay or
	// cancel, the rest walk away. PAY_TIMEOUT is the servers'
	// SECKILL_PAY_TIMEOUT. SETTLE (seconds) bounds the wait for every
	// walked-away order to expire before the audit.
	PayShare, CancelShare float64
	PayTimeout            string
	SettleS               int
	stamp                 string
}

// life says whether buyers pay or cancel after a purchase.
func (c ltConfig) life() bool { return c.PayShare+c.CancelShare > 0 }

// ltConfigFromEnv reads the settings.
func ltConfigFromEnv(getenv func(string) string, root string, now time.Time) (ltConfig, error) {
	get := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	c := ltConfig{Root: root,
		Mode: get("MODE", "lua"), Driver: get("DRIVER", "k6"), Scenario: get("SCENARIO", "burst"),
		OrderMode: get("ORDER_MODE", "sync"), Fencing: get("FENCING", "off"),
		Slow: get("SLOW", "0") == "1", Matrix: get("MATRIX", "0") == "1", SkipBuild: get("SKIP_BUILD", "0") == "1",
		K6: getenv("K6"), JMeterHome: get("JMETER_HOME", "/usr/share/jmeter"),
		MySQLDSN: getenv("SECKILL_MYSQL_DSN"), RedisAddr: getenv("SECKILL_REDIS_ADDR"),
	}
	c.AllowBreach = get("ALLOW_BREACH", get("MATRIX", "0")) == "1"
	redisKind := get("REDIS", "single")
	c.Cluster, c.ClusterAddrs = redisKind == "cluster", getenv("SECKILL_TEST_CLUSTER_ADDRS")
	c.Buckets = get("BUCKETS", "1")
	c.GroupCommit = get("GROUP_COMMIT", "on")
	c.PayTimeout = getenv("PAY_TIMEOUT")
	for _, sh := range []struct {
		name string
		dst  *float64
	}{{"PAY_SHARE", &c.PayShare}, {"CANCEL_SHARE", &c.CancelShare}} {
		v, err := strconv.ParseFloat(get(sh.name, "0"), 64)
		if err != nil || v < 0 || v > 1 {
			return c, fmt.Errorf("%s=%s is not a share between 0 and 1", sh.name, getenv(sh.name))
		}
		*sh.dst = v
	}
	users := get("USERS", "300")
	var stock string
	if c.Slow {
		c.Setting = "slow"
		c.LockTTL, c.CriticalDelay = get("LOCK_TTL", "1s"), get("CRITICAL_DELAY", "2500ms")
		c.RequestTimeout, stock = get("REQUEST_TIMEOUT", "15s"), get("STOCK", users)
	} else {
		c.Setting = "normal"
		c.LockTTL, c.CriticalDelay = get("LOCK_TTL", "10s"), get("CRITICAL_DELAY", "0s")
		c.RequestTimeout, stock = get("REQUEST_TIMEOUT", "3s"), get("STOCK", "200")
	}
	spacing := get("SPACING_MS", map[bool]string{true: "600", false: "0"}[c.Slow])
	nums := []struct {
		name string
		val  string
		dst  *int
	}{{"INSTANCES", get("INSTANCES", "2"), &c.Instances}, {"USERS", users, &c.Users}, {"DUPS", get("DUPS", "4"), &c.Dups},
		{"VUS", get("VUS", "40"), &c.VUs}, {"BASE_PORT", get("BASE_PORT", "18081"), &c.BasePort},
		{"SPACING_MS", spacing, &c.SpacingMS}, {"STOCK", stock, &c.Stock}, {"SETTLE", get("SETTLE", "0"), &c.SettleS}}
	digits := regexp.MustCompile(`^[0-9]+$`)
	for _, n := range nums {
		v, err := strconv.Atoi(n.val)
		if !digits.MatchString(n.val) || err != nil {
			return c, fmt.Errorf("%s=%s is not a number", n.name, n.val)
		}
		*n.dst = v
	}
	c.stamp = now.Format("20060102-150405")
	c.Out = get("OUT", filepath.Join(root, "tools/loadtest/out", fmt.Sprintf("%s-%s-%d-%s", c.stamp, c.Mode, c.Instances, c.Setting)))
	switch {
	case c.Instances < 1 || c.Instances > 16:
		return c, fmt.Errorf("INSTANCES=%d: 1 to 16", c.Instances)
	case c.Users < 1 || c.Dups < 1 || c.Stock < 1:
		return c, errors.New("USERS, DUPS and STOCK must be at least 1")
	case !oneOf(c.Driver, "k6", "jmeter", "go", "auto"):
		return c, fmt.Errorf("DRIVER=%s: k6, jmeter, go or auto", c.Driver)
	case !oneOf(c.Scenario, "burst", "random"):
		return c, fmt.Errorf("SCENARIO=%s: burst or random", c.Scenario)
	case c.MySQLDSN == "":
		return c, errors.New("SECKILL_MYSQL_DSN is empty: the load test needs the real MariaDB (see .ci/env.sh)")
	case !oneOf(redisKind, "single", "cluster"):
		return c, fmt.Errorf("REDIS=%s: single or cluster", redisKind)
	case !c.Cluster && c.RedisAddr == "":
		return c, errors.New("SECKILL_REDIS_ADDR is empty: the load test needs the real Redis (see .ci/env.sh)")
	case c.Cluster && c.ClusterAddrs == "":
		return c, errors.New("REDIS=cluster: SECKILL_TEST_CLUSTER_ADDRS is empty: the load test needs the Redis Cluster of .ci/services.sh (see .ci/env.sh)")
	case c.PayShare+c.CancelShare > 1:
		return c, errors.New("PAY_SHARE + CANCEL_SHARE must be at most 1")
	case c.PayTimeout != "" && !regexp.MustCompile(`^[0-9]+(ms|s|m)$`).MatchString(c.PayTimeout):
		return c, fmt.Errorf("PAY_TIMEOUT=%s: a duration such as 3s", c.PayTimeout)
	case c.Driver == "jmeter" && (c.life() || c.SettleS > 0):
		return c, errors.New("DRIVER=jmeter only buys: the order's life (PAY_SHARE, CANCEL_SHARE, SETTLE) needs k6 or the Go driver")
	case c.Driver == "jmeter" && (c.Slow || c.SpacingMS != 0):
		return c, errors.New("DRIVER=jmeter plays a list of requests without spacing: the slow-business schedule (SLOW=1, SPACING_MS) needs k6")
	}
	return c, nil
}

// redisEnv is the instances' Redis settings: SECKILL_REDIS_ADDR (inherited),
// or, with REDIS=cluster, the cluster instead.
func (c ltConfig) redisEnv() []string {
	if !c.Cluster {
		return nil
	}
	return []string{"SECKILL_REDIS_ADDR=", "SECKILL_REDIS_CLUSTER_ADDRS=" + c.ClusterAddrs}
}

// lifeEnv is the instances' settings of the order's life.
func (c ltConfig) lifeEnv() []string {
	if c.PayTimeout == "" {
		return nil
	}
	return []string{"SECKILL_PAY_TIMEOUT=" + c.PayTimeout}
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
