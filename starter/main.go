// Command tether is Tether's user CLI: run, follow, answer, inspect, resume,
// rewind, fork and delete graph runs on Temporal. See `tether --help`.
package main

import "github.com/tether-run/tether/internal/cli"

func main() { cli.Run() }
