//go:build tether_upgrade_probe

package main

import "github.com/tether-run/tether/internal/upgradeprobe"

// A tether-worker built with -tags tether_upgrade_probe runs one more
// activity before every visit: the test-only change of workflow code with
// which make soak-short proves a rolling upgrade (internal/upgradeprobe).
func init() { extraInterceptors = append(extraInterceptors, upgradeprobe.New(nil)) }
