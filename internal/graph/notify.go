package graph

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Events a run sends notices of (docs/operations.md, "Notifications").
const (
	// NotifyWaiting: the run waits for a person's answer; one notice per
	// question.
	NotifyWaiting = "waiting"
	// NotifyFailed: the run failed, resumably or not.
	NotifyFailed = "failed"
	// NotifyCompleted: the run reached an end node.
	NotifyCompleted = "completed"
	// NotifyBudget: the run stopped because it spent a budget.
	NotifyBudget = "budget"
)

// NotifyEvents lists every event, in documentation order.
func NotifyEvents() []string {
	return []string{NotifyWaiting, NotifyFailed, NotifyCompleted, NotifyBudget}
}

// NotifyAll, in a route's to, names every endpoint.
const NotifyAll = "all"

// NotifyRoutes are a graph's notify: which events go to which of the
// endpoints the workers know (TETHER_NOTIFY). Nil (no notify: in the
// file) sends every endpoint the events its own filter lets through; an
// empty list (`notify: []`) sends nothing. The difference survives JSON
// (omitzero keeps an empty list) and Encode (IsZero).
type NotifyRoutes []NotifyRoute

// IsZero reports a graph without notify:, not one with `notify: []`.
func (r NotifyRoutes) IsZero() bool { return r == nil }

// NotifyRoute sends Events (all when empty) to the endpoints To names
// (all when empty, or when it holds NotifyAll).
type NotifyRoute struct {
	To     []string `json:"to,omitempty" yaml:"to,omitempty"`
	Events []string `json:"events,omitempty" yaml:"events,omitempty"`
}

// Sends reports whether the routes send event to the endpoint called name.
func (r NotifyRoutes) Sends(event, name string) bool {
	if r == nil {
		return true
	}
	for _, rt := range r {
		if (len(rt.Events) == 0 || slices.Contains(rt.Events, event)) &&
			(len(rt.To) == 0 || slices.Contains(rt.To, NotifyAll) || slices.Contains(rt.To, name)) {
			return true
		}
	}
	return false
}

// endpointName is what may name an endpoint: it is part of a notice's
// idempotency key and its workflow's id.
// Its length is checked apart: a counted repetition costs a
// millisecond to compile at every start of tether and the worker.
var endpointName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// ValidEndpointName checks an endpoint's name.
func ValidEndpointName(name string) error {
	if len(name) > 64 || !endpointName.MatchString(name) {
		return fmt.Errorf("endpoint name %q must be letters, digits, '_' and '-' (starting with a letter or digit), at most 64", name)
	}
	return nil
}

// Bounds of a human node's options: each is a button in a notice.
const (
	MaxOptions     = 10
	MaxOptionBytes = 200
)

func (v *validator) checkNotify() {
	for i, rt := range v.g.Notify {
		path := fmt.Sprintf("notify[%d]", i)
		for _, ev := range rt.Events {
			if !slices.Contains(NotifyEvents(), ev) {
				v.add(CodeBadNotifyEvent, v.at(path+".events", path), "", "notify route #%d names event %q; the events are %s", i+1, ev, strings.Join(NotifyEvents(), ", "))
			}
		}
		for _, to := range rt.To {
			if to == NotifyAll {
				continue
			}
			if err := ValidEndpointName(to); err != nil {
				v.add(CodeBadNotifyTo, v.at(path+".to", path), "", "notify route #%d: %v; use a name from the workers' TETHER_NOTIFY, or %s", i+1, err, NotifyAll)
			}
		}
	}
}

func (v *validator) checkOptions(i int, name string) {
	n := &v.g.Nodes[i]
	path := nodePath(i) + ".options"
	pos := v.at(path, nodePath(i))
	if len(n.Options) > MaxOptions {
		v.add(CodeBadOptions, pos, n.ID, "human node %s has %d options; a notice shows at most %d buttons, so keep the %d most useful (any other answer can still be typed)", name, len(n.Options), MaxOptions, MaxOptions)
	}
	seen := map[string]bool{}
	for _, o := range n.Options {
		switch {
		case strings.TrimSpace(o) == "":
			v.add(CodeBadOptions, pos, n.ID, "human node %s has an empty option; remove it", name)
		case len(o) > MaxOptionBytes:
			v.add(CodeBadOptions, pos, n.ID, "an option of human node %s is %d bytes long; an option is a button's label, at most %d", name, len(o), MaxOptionBytes)
		case seen[o]:
			v.add(CodeBadOptions, pos, n.ID, "human node %s offers option %q twice; keep one", name, o)
		}
		seen[o] = true
	}
}
