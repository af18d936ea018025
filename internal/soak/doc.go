// Package soak drives Tether's production topology (scripts/cluster.sh:
// Temporal on PostgreSQL, versitygw, several workers) under load and
// faults, and checks afterwards that nothing was lost: every run
// completed, every persist conversation holds exactly its turns in order,
// every workspace exactly its files, every blob a checkpoint names is
// there, and `tether delete` leaves the bucket empty. It measures visits/s
// and visit latency at several concurrencies beside the same cluster's
// floor (a workflow whose activities do nothing). `make soak` runs it;
// cmd/soak is the program.
package soak
