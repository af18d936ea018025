// Package backend is Tether's registry of agent backends: the one place
// that builds the backends a worker runs (New), one for each backend the
// catalogue (internal/catalogue) lists as implemented, so the capability
// table and the worker's backend list cannot disagree. The catalogue
// itself links no executor; this package links them all.
//
// What a backend is (an executor, a session packer) is the contract in
// internal/agent. Everything about one backend is in its own folder,
// internal/backend/<name>: its facts (facts/: what it honours, the
// variables it reads), its session layout and transcript reader
// (session/), and its executor with its constructor, Configured. The
// constructors are listed in registry_gen.go, which `go generate
// ./internal/backend` writes from the catalogue; nothing else here names
// a backend.
package backend

//go:generate go run ../catalogue/gen
//go:generate go run ./gen
