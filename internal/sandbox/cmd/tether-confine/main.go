// Command tether-confine is the confine helper on its own, for tests that
// run workers inside the test process: `tether-confine [--rw PATH]...
// [--ro PATH]... -- PROGRAM [ARG]...` is what `tether-worker confine` does.
package main

import (
	"os"

	"github.com/tether-run/tether/internal/sandbox"
)

func main() { os.Exit(sandbox.Main(os.Args[1:])) }
