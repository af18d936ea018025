// Package confine is the confine helper: the process that runs inside a
// visit's sandbox, confines itself, and runs the visit's program (an
// agent CLI or a tool). The worker's side (internal/sandbox) builds the
// sandbox around it and hands it its Args; the small tether-confine binary
// links this package alone.
//
// Inside bubblewrap's namespaces (Args.Inside) the helper is their first
// process: it leaves the worker's session, joins a fresh keyring, makes a
// network namespace whose only way out is a relay to the worker's egress
// proxy, drops every capability, holds the visit to the limits no cgroup
// holds it to (memory, tasks, what it writes to the worker's disk),
// applies Landlock and a seccomp filter, and runs the program until it
// ends, which ends every process of the namespace. On a machine without
// namespaces it applies Landlock, the seccomp filter and an empty
// capability set to itself and becomes the program.
package confine

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// Subcommand is the worker's hidden subcommand that is the confine helper:
// `tether-worker confine ARGS` runs Main(ARGS); tether-confine is the
// same helper built alone, which starts in a few milliseconds instead of
// the worker's few hundred.
const Subcommand = "confine"

// ExitConfine is the helper's exit status when it could not confine itself
// or start the program: the program never ran.
const ExitConfine = 126

// SystemPaths are what every confined process may read and execute: the
// system's programs and libraries. /etc is added without EtcDenied; /proc
// and /dev are the sandbox's own (inside the namespaces) or the machine's.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// SysPaths are parts of /sys a confined process may read: the CPU
// topology, which runtimes read to size their thread pools.
var SysPaths = []string{"/sys/devices/system/cpu"}

// EtcDenied are the entries of /etc no confined process may read: password
// hashes, sudo rules, SSH host keys, TLS private keys.
var EtcDenied = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssh", "security", "ssl/private"}

// devFiles are the device files a confined process may read and write. No
// /dev/tty: a confined process has no terminal.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// Main is the confine helper: it reads its Args, confines itself to what
// they say, then runs the program. It returns only on failure, with
// ExitConfine.
func Main(args []string) int {
	a, err := Parse(args)
	switch {
	case err != nil:
	case a.Inside:
		err = inner(a)
	default:
		err = landlockOnly(a)
	}
	fmt.Fprintln(os.Stderr, "tether confine:", err)
	return ExitConfine
}

// landlockOnly confines the helper with Landlock, the seccomp filter and
// an empty capability set, then replaces it with the program: the
// confinement of a machine without namespaces.
func landlockOnly(a Args) error {
	// Capability sets and the bounding set belong to a thread: dropping
	// them, and the exec that must inherit the drop, happen on one.
	runtime.LockOSThread()
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := restrict(a.RW, a.RO, false); err != nil {
		return err
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	err := syscall.Exec(a.Command[0], a.Command, os.Environ())
	return fmt.Errorf("exec %s: %w", a.Command[0], err)
}
