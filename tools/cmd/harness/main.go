// Command harness runs the load tests, the benchmark and the fault suite.
// Each subcommand is a package below this one. main only dispatches.
// Each run audits its vouchers with the tests' invariant code. It writes a
// report with a results.json beside it.
//
//	go -C tools run ./cmd/harness loadtest   one experiment (make loadtest; settings in the environment)
//	go -C tools run ./cmd/harness matrix     every lock mode x 1, 2 instances x normal, slow (make loadtest-matrix)
//	go -C tools run ./cmd/harness ci         the short load test of CI (make loadtest-ci)
//	go -C tools run ./cmd/harness bench      the machine's limits and the seckill in every mode (make bench; BENCH_* settings in docs/bench-harness.md)
//	go -C tools run ./cmd/harness faults     the fault suite on private MariaDB/Redis/Sentinel processes (make faults; settings in tools/faults/README.md)
//	go -C tools run ./cmd/harness fairness   the waiting room's fairness run, 20,000 buyers and 500 units (FAIR_* settings in docs/waiting-room.md)
//	go -C tools run ./cmd/harness lockcheck  recorded lock histories under faults, checked by porcupine (make lock-check)
//	go -C tools run ./cmd/harness stampede   5,000 connections at once on the purchase beside 64 (STAMPEDE_* settings in docs/bench-harness.md)
//	go -C tools run ./cmd/harness pictures   docs/*.svg from the results.json files above (make pictures; -check: exit 1 when one is out of date)
//
// The settings are environment variables, as tools/loadtest/README.md lists them.
package main

import (
	"fmt"
	"os"

	"seckill/tools/cmd/harness/bench"
	"seckill/tools/cmd/harness/fairness"
	"seckill/tools/cmd/harness/faults"
	"seckill/tools/cmd/harness/loadrun"
	"seckill/tools/cmd/harness/lockrun"
	"seckill/tools/cmd/harness/pictures"
	"seckill/tools/cmd/harness/stampede"
	"seckill/tools/internal/house"
)

// commands maps each subcommand to its run, which returns the exit status.
var commands = map[string]func(args []string) int{
	"loadtest":         loadrun.RunLoadtest,
	"matrix":           loadrun.RunMatrix,
	"ci":               loadrun.RunCI,
	"bench":            bench.Run,
	"faults":           faults.Run,
	"fairness":         fairness.Run,
	"pictures":         pictures.Run,
	"lockcheck":        lockrun.Run,
	"lockcheck-client": lockrun.RunClient,
	"house":            house.Main,
	"stampede":         stampede.Run,
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	os.Exit(run(os.Args[2:]))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: harness loadtest|matrix|ci|bench|stampede|faults|fairness|lockcheck|pictures|house (settings in the environment, see tools/loadtest/README.md and tools/faults/README.md)")
}
