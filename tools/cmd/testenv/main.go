// Command testenv runs a command (`make test`'s go test) with the services
// of the integration tests. A service whose variable is set (as
// .ci/env.sh sets them in CI) is used as it is. One whose variable is
// unset gets a private throwaway server, when its program is installed:
// a MariaDB on its own datadir, redis-servers, a Sentinel-managed Redis
// and a Redis Cluster, on free loopback ports under a temporary directory.
// SECKILL_TEST_FAKEPAY unset gets the fake pay providers
// (tools/internal/fakepay) in this process, their keys made for the run:
// the variable names their env file.
// They stop, and the directory goes, when the command ends. A service
// neither set nor installed stays unset, and its tests skip and say why.
// ZooKeeper is never started here: its tests need SECKILL_ZK_ADDRS.
//
//	testenv go test -race ./...
//
// SECKILL_TEST_PRIVATE=off runs the command as it is, starting nothing.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testenv command [args...] (e.g. testenv go test ./...)")
		os.Exit(2)
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run starts what plan asks for, runs the command with the variables
// added, stops the servers and returns the command's exit status.
func run(ctx context.Context, command []string, log io.Writer) int {
	var todo []step
	if os.Getenv("SECKILL_TEST_PRIVATE") != "off" {
		var missing []string
		todo, missing = plan(os.Getenv, installed)
		for _, m := range missing {
			fmt.Fprintln(log, "testenv:", m)
		}
	}
	if len(todo) == 0 {
		// Nothing to start (CI): the command replaces this process.
		path, err := exec.LookPath(command[0])
		if err == nil {
			err = syscall.Exec(path, command, os.Environ())
		}
		fmt.Fprintln(log, "testenv:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "seckill-testenv-")
	if err != nil {
		fmt.Fprintln(log, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	env, stop, err := start(ctx, dir, todo, log)
	defer stop()
	if err != nil {
		fmt.Fprintf(log, "testenv: %v (SECKILL_TEST_PRIVATE=off runs without private servers)\n", err)
		return 1
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A signal goes on to the command: the servers stop after it ends.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err = cmd.Start(); err == nil {
		go func() {
			for sig := range sigs {
				_ = cmd.Process.Signal(sig)
			}
		}()
		err = cmd.Wait()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(log, "testenv:", err)
		return 1
	}
	return 0
}
