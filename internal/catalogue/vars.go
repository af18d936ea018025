package catalogue

import (
	"slices"

	"github.com/tether-run/tether/internal/agent"
)

// Vars reads every backend's variables (agent.Facts.Vars) with getenv,
// by backend name and then variable name; an unset variable is left out.
// A variable several backends read (OPENAI_API_KEY) is each one's.
func Vars(getenv func(string) string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, b := range backends {
		for _, v := range b.Vars {
			val := getenv(v.Name)
			if val == "" {
				continue
			}
			if out[b.Name] == nil {
				out[b.Name] = map[string]string{}
			}
			out[b.Name][v.Name] = val
		}
	}
	return out
}

// Shown is what a log line or a printed configuration may show of
// backends' variables: every value but the keys (agent.VarAPIKey) and
// the names of the backends that have a key. A variable of a backend the
// catalogue does not know may be anything, and is not shown.
func Shown(vars map[string]map[string]string) (shown map[string]map[string]string, keyed []string) {
	shown = map[string]map[string]string{}
	for name, vs := range vars {
		f, known := Lookup(name)
		key, _ := f.Var(agent.VarAPIKey)
		for k, v := range vs {
			switch {
			case v == "" || !known:
			case k == key.Name:
				keyed = append(keyed, name)
			default:
				if shown[name] == nil {
					shown[name] = map[string]string{}
				}
				shown[name][k] = v
			}
		}
	}
	slices.Sort(keyed)
	return shown, slices.Compact(keyed)
}

// KeyVars are the names of every backend's model key variable
// (agent.VarAPIKey), sorted: the worker's model relay holds their values,
// and no confined process gets one by name.
func KeyVars() []string {
	var out []string
	for _, b := range backends {
		for _, v := range b.Vars {
			if v.Role == agent.VarAPIKey {
				out = append(out, v.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
