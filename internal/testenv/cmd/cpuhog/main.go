// Command cpuhog keeps every core busy until it is stopped (or -for has
// passed), so that `make test-loaded` runs the suite on a machine as busy
// as a shared CI runner: a test that only passes on a quiet machine fails
// there.
package main

import (
	"flag"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	procs := flag.Int("procs", runtime.NumCPU(), "busy loops to run (default: one per core)")
	limit := flag.Duration("for", 0, "stop after this long (0: when signalled)")
	flag.Parse()
	for range *procs {
		go spin()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	var timeout <-chan time.Time
	if *limit > 0 {
		timeout = time.After(*limit)
	}
	select {
	case <-stop:
	case <-timeout:
	}
}

// spin burns one core. The loop does work the compiler cannot drop.
func spin() {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			runtime.Gosched()
		}
	}
}
