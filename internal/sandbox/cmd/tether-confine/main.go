// Command tether-confine is the confine helper (internal/sandbox/confine)
// built alone, as `make build` puts it beside tether-worker: the worker
// starts it for every confined process, where it starts in a few
// milliseconds instead of the worker binary's few hundred
// (`tether-worker confine` is the same helper).
//
// Its command line is what confine.Args.Argv writes, and nothing else:
//
//	tether-confine [--rw PATH]... [--ro PATH]... -- PROGRAM [ARG]...
//
// on a machine without namespaces (Landlock, the seccomp filter and an
// empty capability set, then PROGRAM in its place), and, as the first
// process bubblewrap starts,
//
//	tether-confine --inner [--probe] [--ready-fd FD] [--rw PATH]... [--ro PATH]...
//	    [--socket SOCKET --proxy ADDR [--relay LISTEN=TARGET]...]
//	    [--mem BYTES] [--nproc N] [--disk BYTES [--watch DIR]...] -- PROGRAM [ARG]...
//
// A leading "confine" (the worker's subcommand) is taken off. It exits
// with PROGRAM's status, or 126 when it could not confine itself or start
// PROGRAM, which then never ran.
package main

import (
	"os"

	"github.com/tether-run/tether/internal/sandbox/confine"
)

func main() {
	args := os.Args[1:]
	// Taken, as `tether-worker confine` takes it.
	if len(args) > 0 && args[0] == confine.Subcommand {
		args = args[1:]
	}
	os.Exit(confine.Main(args))
}
