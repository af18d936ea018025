// Package egress is the only way out of a confined process's network
// namespace: an HTTP proxy (plain requests and CONNECT tunnels) that the
// worker serves on a Unix socket per visit, which lets through exactly the
// host:port patterns (internal/hostport) the visit's node allows and never
// the worker's own services or the machine's metadata addresses. It links
// nothing that confines a process.
package egress
