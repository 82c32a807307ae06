package lock

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Modes lists every backend name New accepts, in the order of the family:
// from no lock to the strongest. It is the set of SECKILL_LOCK_MODE values.
// Callers must not modify it.
var Modes = []string{
	"none", "local", "simple", "owner", "lua", "reentrant",
	"redsync", "multi", "mysql", "zookeeper",
}

// Deps are the connections the backends may need; New uses only those its
// mode needs.
type Deps struct {
	// Redis serves simple, owner, lua and reentrant.
	Redis redis.UniversalClient
	// Nodes are the independent Redis nodes of redsync and multi. Default:
	// Redis alone.
	Nodes []redis.UniversalClient
	// DB serves mysql.
	DB *sql.DB
	// ZKServers are the ZooKeeper servers (host:port) of zookeeper.
	ZKServers []string
}

// New returns the backend named mode. Reentrant, redsync and multi get the
// watchdog on unless opts turn it off. The others never renew. An unknown
// mode or a missing dependency is an error naming it.
func New(mode string, deps Deps, opts ...Option) (Locker, error) {
	// The single-Redis backends run on deps.Redis.
	if slices.Contains([]string{"simple", "owner", "lua", "reentrant"}, mode) && deps.Redis == nil {
		return nil, fmt.Errorf("lock: mode %q needs a Redis client", mode)
	}
	switch mode {
	case "none":
		return NewNone(), nil
	case "local":
		return NewLocal(opts...)
	case "simple":
		return NewSimple(deps.Redis, opts...)
	case "owner":
		return NewOwner(deps.Redis, opts...)
	case "lua":
		return NewScripted(deps.Redis, opts...)
	case "reentrant":
		return NewReentrant(deps.Redis, withWatchdogDefault(opts)...)
	case "redsync", "multi":
		nodes, err := nodesOrRedis(deps)
		if err != nil {
			return nil, err
		}
		if mode == "multi" {
			return NewMulti(nodes, withWatchdogDefault(opts)...)
		}
		return NewRedsync(nodes, withWatchdogDefault(opts)...)
	case "mysql":
		if deps.DB == nil {
			return nil, fmt.Errorf("lock: mode %q needs a database (*sql.DB)", mode)
		}
		return NewMySQL(deps.DB, opts...)
	case "zookeeper":
		if len(deps.ZKServers) == 0 {
			return nil, fmt.Errorf("lock: mode %q needs ZooKeeper servers", mode)
		}
		return dialZookeeperForNew(deps.ZKServers, opts...)
	}
	return nil, fmt.Errorf("lock: unknown mode %q (want one of %s)", mode, strings.Join(Modes, ", "))
}

// withWatchdogDefault puts the watchdog on ahead of opts, so that an explicit
// WithWatchdog(false) in opts still wins.
func withWatchdogDefault(opts []Option) []Option {
	return append([]Option{WithWatchdog(true)}, opts...)
}

// nodesOrRedis returns deps.Nodes, or deps.Redis alone when Nodes is empty.
func nodesOrRedis(deps Deps) ([]redis.UniversalClient, error) {
	if len(deps.Nodes) > 0 {
		return deps.Nodes, nil
	}
	if deps.Redis == nil {
		return nil, errors.New("lock: no Redis nodes: set Deps.Nodes or Deps.Redis")
	}
	return []redis.UniversalClient{deps.Redis}, nil
}
