// Command docgen writes the table of settings into docs/configuration.md;
// `go generate ./config` runs it.
package main

import (
	"fmt"
	"os"

	"seckill/config"
)

func main() {
	path := "../docs/configuration.md"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := run(path); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := config.WithTable(string(doc))
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
