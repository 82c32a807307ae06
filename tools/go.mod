module seckill/tools

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-sql-driver/mysql v1.10.1
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/sys v0.50.0
	seckill v0.0.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-redis/redis_rate/v10 v10.0.1 // indirect
	github.com/go-redsync/redsync/v4 v4.18.1 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)

replace seckill => ../
