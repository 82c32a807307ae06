// Command fakepay runs the fake pay providers (tools/internal/fakepay) on
// loopback: Alipay's gateway.do and WeChat Pay's API v3 as their SDKs
// call them, signed with keys it generates in -keys where missing (keep
// that directory out of the repository), and a control API that pays
// trades and sends their notifications. It writes the settings of the
// service and of the tests to -env-file and stops after -max-duration,
// or on SIGINT/SIGTERM.
//
//	go -C tools run ./cmd/fakepay -keys /tmp/fakepay-keys -env-file /tmp/fakepay.env
//	set -a; . /tmp/fakepay.env; set +a; SECKILL_TEST_FAKEPAY=/tmp/fakepay.env go test ./pay/...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"seckill/tools/internal/fakepay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses the flags, starts the fake and waits for ctx, -max-duration
// or the server's end. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakepay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback only)")
	keys := fs.String("keys", "", "key directory: read, or generated where missing (required; never commit it)")
	envFile := fs.String("env-file", "", "write the settings (KEY=value lines) to this file")
	maxDuration := fs.Duration("max-duration", 3*time.Hour, "stop after this long")
	verbose := fs.Bool("v", false, "log each notification sent")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *keys == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: fakepay -keys DIR [-listen 127.0.0.1:0] [-env-file FILE] [-max-duration 3h]")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *maxDuration)
	defer cancel()
	var log io.Writer
	if *verbose {
		log = stderr
	}
	s, err := fakepay.Start(ctx, fakepay.Options{Listen: *listen, KeyDir: *keys, EnvFile: *envFile, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "fakepay: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "fakepay: listening on %s (keys %s", s.URL(), *keys)
	if *envFile != "" {
		fmt.Fprintf(stdout, ", env %s", *envFile)
	}
	fmt.Fprintf(stdout, "; stops after %s)\n", *maxDuration)
	<-s.Done()
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "fakepay: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "fakepay: stopped: %v\n", context.Cause(ctx))
	return 0
}
