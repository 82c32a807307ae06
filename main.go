// Command seckill serves flash-sale vouchers (the Heima Dianping seckill)
// with a configurable per-user distributed lock. See README.md.
//
//	seckill [serve]                               run the HTTP server
//	seckill migrate                               apply sql/schema.sql and exit
//	seckill tokens --count N [--admin] [--out F]  print userId,token lines
//	seckill rebuild --voucher N                   async mode: rebuild a voucher's Redis state
//	seckill revoke --user N                       refuse the user's tokens issued until now
//	seckill reconcile-payments [--date YYYY-MM-DD]  compare the providers' bills with the orders (exit 3: mismatches)
//
// The wiring, the server and the commands live in package app.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"seckill/app"
	"seckill/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:], config.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		stop()
		code := 1
		var e *app.ExitError
		if errors.As(err, &e) {
			code = e.ExitCode()
		}
		os.Exit(code)
	}
}
