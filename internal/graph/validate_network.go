package graph

import (
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/hostport"
)

// checkNetwork checks an agent or tool node's network: its form, that its
// kind can use it (a tool has no model; an agent cut off its model cannot
// work), and every allow pattern.
func (v *validator) checkNetwork(i int, name string) {
	n := &v.g.Nodes[i]
	if n.Network == nil {
		return
	}
	path := nodePath(i) + ".network"
	pos := v.at(path, nodePath(i))
	switch n.Network.Mode {
	case "":
		if len(n.Network.Allow) == 0 {
			v.add(CodeBadNetwork, pos, n.ID, "the network of node %s allows nothing; list host:port patterns, e.g. network: {allow: [\"proxy.golang.org:443\"]}, or write network: none", name)
		}
	case NetworkModel:
		if n.Kind == KindTool {
			v.add(CodeBadNetwork, pos, n.ID, "tool node %s has network: model, but a tool has no model; write network: {allow: [host:port, ...]} with what it needs, or leave network out to cut it off", name)
		}
		return
	case NetworkNone:
		if n.Kind == KindAgent {
			v.add(CodeBadNetwork, pos, n.ID, "agent node %s has network: none, which cuts it off its own model; leave network out (its model's endpoint only), or add what else it needs with network: {allow: [host:port, ...]}", name)
		}
		return
	default:
		v.add(CodeBadNetwork, pos, n.ID, "node %s has network %q; %swrite %s", name, n.Network.Mode, didYouMean(n.Network.Mode, []string{NetworkModel, NetworkNone}), networkForms)
		return
	}
	for j, a := range n.Network.Allow {
		if _, err := hostport.ParsePattern(a); err != nil {
			msg := strings.TrimPrefix(err.Error(), hostport.ErrBadPattern.Error()+" ")
			v.add(CodeBadAllow, v.at(path+".allow", path), n.ID, "allow entry %d of node %s: %s", j+1, name, msg)
		}
	}
}

// checkLimits checks an agent or tool node's limits.
func (v *validator) checkLimits(i int, name string) {
	n := &v.g.Nodes[i]
	l := n.Limits
	if l == nil {
		return
	}
	path := nodePath(i) + ".limits"
	bad := func(field, format string, args ...any) {
		v.add(CodeBadLimits, v.at(path+"."+field, path), n.ID, "the %s limit of node %s %s", field, name, fmt.Sprintf(format, args...))
	}
	if *l == (Limits{}) {
		v.add(CodeBadLimits, v.at(path, nodePath(i)), n.ID, "node %s has limits that set nothing; set memory, pids, cpu or disk, e.g. limits: {memory: 2GiB}, or leave limits out for the worker's defaults", name)
		return
	}
	if b, err := l.MemoryBytes(); err != nil {
		bad("memory", "is not a size: %v", err)
	} else if l.Memory != "" && b < MinMemory {
		bad("memory", "is %s, under %d MiB, too little to start an agent CLI or a toolchain; raise it", l.Memory, MinMemory>>20)
	}
	if b, err := l.DiskBytes(); err != nil {
		bad("disk", "is not a size: %v", err)
	} else if l.Disk != "" && b < MinDisk {
		bad("disk", "is %s, under %d MiB, too little for a CLI's state and temporary files; raise it", l.Disk, MinDisk>>20)
	}
	if l.Pids < 0 || l.Pids > 0 && l.Pids < 16 {
		bad("pids", "is %d; allow at least 16 processes and threads (a CLI and its runtime use a dozen), or leave it out", l.Pids)
	}
	if l.CPU < 0 {
		bad("cpu", "is %v; write the cores' worth of CPU time the node may use, e.g. 1.5, or leave it out", l.CPU)
	}
}
