// Command certs issues, or renews, the certificates of one Tether
// cluster's Temporal server and its clients (package pki) into a
// directory: scripts/cluster.sh runs it on every `up`, docker-compose.yml
// as its one-shot "certs" service.
//
//	certs -dir DIR -hosts 127.0.0.1,localhost [-owner UID:GID]
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/pki"
)

func main() {
	var o pki.Options
	var hosts, owner string
	flag.StringVar(&o.Dir, "dir", "", "the directory the role directories go into (required)")
	flag.StringVar(&hosts, "hosts", "127.0.0.1,localhost", "comma-separated names and addresses clients dial the frontend at")
	flag.StringVar(&owner, "owner", "", "UID:GID that owns what is written (when run as root for another user)")
	flag.Parse()
	if o.Dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: certs -dir DIR [-hosts H1,H2] [-owner UID:GID]")
		os.Exit(2)
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.Hosts = append(o.Hosts, h)
		}
	}
	if owner != "" {
		u, g, ok := strings.Cut(owner, ":")
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if !ok || err1 != nil || err2 != nil {
			fmt.Fprintf(os.Stderr, "certs: -owner %q: want UID:GID, e.g. 1000:1000\n", owner)
			os.Exit(2)
		}
		o.Owner = &pki.Owner{UID: uid, GID: gid}
	}
	issued, err := pki.Ensure(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		os.Exit(1)
	}
	if len(issued) == 0 {
		fmt.Printf("certs: every certificate in %s is valid; kept\n", o.Dir)
		return
	}
	fmt.Printf("certs: issued %s in %s\n", strings.Join(issued, ", "), o.Dir)
}
