// Command tether-confine is the confine helper on its own, for measuring
// and trying it outside a worker: `tether-confine [--ns] [--tmp DIR]
// [--rw PATH]... [--ro PATH]... -- PROGRAM [ARG]...` does what
// `tether-worker confine` does.
package main

import (
	"os"

	"github.com/tether-run/tether/internal/sandbox"
)

func main() {
	args := os.Args[1:]
	// The helper starts itself again as `<self> confine --init …`.
	if len(args) > 0 && args[0] == sandbox.Subcommand {
		args = args[1:]
	}
	os.Exit(sandbox.Main(args))
}
