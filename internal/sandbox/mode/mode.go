// Package mode names the sandbox's modes of confinement and reads
// TETHER_SANDBOX: the configuration that `tether` also loads checks the
// setting here, without linking the sandbox itself.
package mode

import "fmt"

// Modes of confinement, as TETHER_SANDBOX spells them.
const (
	// Auto is the strongest confinement the machine offers; the
	// worker says at start which one that is.
	Auto = "auto"
	// Full requires namespaces (bubblewrap), Landlock and seccomp: a
	// worker that cannot have them refuses to start.
	Full = "full"
	// Landlock requires at least Landlock; it still uses namespaces
	// where the machine allows them.
	Landlock = "landlock"
	// Off runs every process unconfined, and is the only way to run
	// the nodes a weaker sandbox refuses.
	Off = "off"
)

// Parse reads a TETHER_SANDBOX value ("" is Auto).
func Parse(s string) (string, error) {
	switch s {
	case "", Auto:
		return Auto, nil
	case Full, Landlock, Off:
		return s, nil
	}
	return "", fmt.Errorf("want %s, %s, %s or %s", Auto, Full, Landlock, Off)
}
