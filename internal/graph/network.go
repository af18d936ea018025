package graph

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Network modes of an agent or tool node's network: field.
const (
	// NetworkModel reaches the agent backend's model endpoint only: the
	// default of agent nodes.
	NetworkModel = "model"
	// NetworkNone reaches nothing: the default of tool nodes.
	NetworkNone = "none"
)

// Network is what a confined agent or tool may reach, through the
// worker's egress proxy: in a graph file the string model or none, or a
// mapping {allow: [host:port, ...]} whose patterns are added to the
// node's default (for an agent, its model's endpoint). JSON uses the same
// forms. The worker's own services and metadata addresses are refused
// whatever a node allows (docs/security.md).
type Network struct {
	// Mode is NetworkModel, NetworkNone, or "" for the allow form.
	Mode string `json:"-" yaml:"-"`
	// Allow are host:port patterns: api.example.com:443,
	// *.example.com:443, [::1]:8080, with port * for any.
	Allow []string `json:"allow" yaml:"allow"`
}

// networkAllowForm is the mapping form.
type networkAllowForm struct {
	Allow []string `json:"allow" yaml:"allow"`
}

func (n Network) dslValue() any {
	if n.Mode != "" {
		return n.Mode
	}
	return networkAllowForm{Allow: n.Allow}
}

// MarshalJSON writes "model", "none", or {"allow": [...]}.
func (n Network) MarshalJSON() ([]byte, error) { return json.Marshal(n.dslValue()) }

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Network) UnmarshalJSON(b []byte) error { return networkCodec.readJSON(n, b) }

// MarshalYAML writes the same forms as MarshalJSON.
func (n Network) MarshalYAML() (any, error) { return n.dslValue(), nil }

// UnmarshalYAML reads the forms MarshalYAML writes, for the YAML
// library's own decoder (Parse reads them itself, with positions).
func (n *Network) UnmarshalYAML(unmarshal func(any) error) error {
	return networkCodec.readYAML(n, unmarshal)
}

// networkCodec reads a node's network.
var networkCodec = modeOrForm[networkAllowForm, Network]{
	what: "network", forms: networkForms,
	mode: func(m string) Network { return Network{Mode: m} },
	form: func(f networkAllowForm) Network { return Network{Allow: f.Allow} },
}

// networkForms says how a node's network is written, for messages.
var networkForms = "model, none, or a mapping {allow: [host:port, ...]}"

// Limits bound what one visit of an agent or tool node may use, all its
// processes together: Memory (a size such as 512MiB or 2GiB), Pids
// (processes and threads), CPU (cores' worth of CPU time, e.g. 1.5), Disk
// (a size: the visit's /tmp, and what it may write to the worker's disk).
// A zero field keeps the worker's default (docs/security.md).
type Limits struct {
	Memory string  `json:"memory,omitempty" yaml:"memory,omitempty"`
	Pids   int     `json:"pids,omitempty" yaml:"pids,omitempty"`
	CPU    float64 `json:"cpu,omitempty" yaml:"cpu,omitempty"`
	Disk   string  `json:"disk,omitempty" yaml:"disk,omitempty"`
}

// MinMemory is the smallest memory limit a node may set: less does not
// start a CLI.
const MinMemory = 32 << 20

// MinDisk is the smallest disk limit a node may set: less does not start
// a CLI, which writes its state and temporary files.
const MinDisk = 16 << 20

// MemoryBytes is Memory in bytes, 0 when it is not set.
func (l Limits) MemoryBytes() (int64, error) {
	return ParseSize(l.Memory)
}

// DiskBytes is Disk in bytes, 0 when it is not set.
func (l Limits) DiskBytes() (int64, error) {
	return ParseSize(l.Disk)
}

// ParseSize reads a size: a whole number of bytes, or a number with a
// unit (K, M, G, T, optionally followed by i and B, all in powers of
// 1024; KB, MB, GB, TB in powers of 1000).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size: write a number with a unit, e.g. 512MiB or 2GiB", s)
	}
	mult := map[string]float64{
		"": 1, "B": 1,
		"K": 1 << 10, "KiB": 1 << 10, "Ki": 1 << 10, "KB": 1e3,
		"M": 1 << 20, "MiB": 1 << 20, "Mi": 1 << 20, "MB": 1e6,
		"G": 1 << 30, "GiB": 1 << 30, "Gi": 1 << 30, "GB": 1e9,
		"T": 1 << 40, "TiB": 1 << 40, "Ti": 1 << 40, "TB": 1e12,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q has an unknown unit %q: use B, KiB, MiB, GiB or TiB (or KB, MB, GB, TB)", s, unit)
	}
	if f*mult > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(f * mult), nil
}
