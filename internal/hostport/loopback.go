package hostport

import (
	"net/netip"
	"strings"
)

// Loopback reports whether host (a name or an IP address, in brackets or
// not, without a port) is this machine's loopback: localhost or a
// loopback address (127.0.0.0/8, ::1, either mapped). An address with a
// zone, and every other name, is not.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}
