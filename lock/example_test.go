package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/lock"
)

// exampleRedis starts an in-process Redis so that the examples run anywhere.
func exampleRedis() (*redis.Client, func()) {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatalf("miniredis: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	return c, func() {
		if err := c.Close(); err != nil {
			log.Printf("close: %v", err)
		}
		srv.Close()
	}
}

// The lua backend: one holder at a time, a fencing token per grant, and a
// release that only ever deletes its own lock.
func ExampleScripted() {
	client, stop := exampleRedis()
	defer stop()
	locker, err := lock.NewScripted(client)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	l, err := locker.Obtain(ctx, "lock:order:42")
	if err != nil {
		log.Fatal(err)
	}
	token, _ := l.Token()
	fmt.Println("first holder, token", token)

	_, err = locker.Obtain(ctx, "lock:order:42")
	fmt.Println("second caller:", errors.Is(err, lock.ErrNotObtained))

	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("release twice:", l.Release(ctx))

	l, err = locker.Obtain(ctx, "lock:order:42")
	if err != nil {
		log.Fatal(err)
	}
	token, _ = l.Token()
	fmt.Println("next holder, token", token)
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// first holder, token 1
	// second caller: true
	// release twice: lock: not held
	// next holder, token 2
}

// The reentrant backend: the same owner (carried in the context) nests, and
// the lock is free only after as many releases as grants.
func ExampleReentrant() {
	client, stop := exampleRedis()
	defer stop()
	locker, err := lock.NewReentrant(client)
	if err != nil {
		log.Fatal(err)
	}
	ctx := lock.WithOwner(context.Background(), "order-worker-1")

	outer, err := locker.Obtain(ctx, "lock:order:7")
	if err != nil {
		log.Fatal(err)
	}
	inner, err := locker.Obtain(ctx, "lock:order:7") // same owner: nests
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hold count:", client.HGet(ctx, "lock:order:7", "order-worker-1").Val())

	_, err = locker.Obtain(context.Background(), "lock:order:7") // another owner
	fmt.Println("another owner:", err)

	if err := inner.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after one release:", client.HGet(ctx, "lock:order:7", "order-worker-1").Val())
	if err := outer.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after both:", client.Exists(ctx, "lock:order:7").Val())
	// Output:
	// hold count: 2
	// another owner: lock: not obtained
	// after one release: 1
	// after both: 0
}

// New picks a backend by its SECKILL_LOCK_MODE name.
func ExampleNew() {
	locker, err := lock.New("local", lock.Deps{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(locker.Name())

	_, err = lock.New("spinlock", lock.Deps{})
	fmt.Println(err != nil)
	// Output:
	// local
	// true
}
