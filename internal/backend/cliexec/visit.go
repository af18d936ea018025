package cliexec

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
)

// DefaultAskUserGrace is how long a CLI may keep going after the agent
// called ask_user before the executor ends the turn itself.
const DefaultAskUserGrace = 30 * time.Second

// Visit is one visit's scratch directory: the ask_user record, MCP and
// provider configuration, and any per-visit copy of credentials live here,
// outside the state root, so that no packer ever sees them.
type Visit struct {
	Dir string
	// Record is where the ask_user server writes the questions.
	Record string
	// Prompt is what the CLI gets on stdin and Model the model it runs
	// (CLI.Begin sets both).
	Prompt string
	Model  string
	// BaseURL and APIKey are the model endpoint and key the CLI is given
	// for the visit, in its environment or its configuration: with the
	// worker's model relay, the relay's loopback URL and the visit's
	// placeholder, never the worker's key; empty, the CLI's own default
	// endpoint and no key.
	BaseURL, APIKey string
}

// NewVisit makes a private scratch directory under tempDir ("" means the
// system default).
func NewVisit(tempDir string) (*Visit, error) {
	dir, err := os.MkdirTemp(tempDir, "tether-visit-*")
	if err != nil {
		return nil, fmt.Errorf("create visit scratch dir: %w", err)
	}
	return &Visit{Dir: dir, Record: filepath.Join(dir, "ask-user.json")}, nil
}

// Close removes the scratch directory.
func (v *Visit) Close() { _ = os.RemoveAll(v.Dir) }

// WriteFile writes a private file into the scratch directory and returns
// its path.
func (v *Visit) WriteFile(name string, data []byte) (string, error) {
	p := filepath.Join(v.Dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return p, nil
}

// AskUserStop returns a Spec.Stop that ends the CLI once the agent has
// asked and grace has passed without the turn ending on its own.
func (v *Visit) AskUserStop(grace time.Duration) func() bool {
	if grace <= 0 {
		grace = DefaultAskUserGrace
	}
	var seen time.Time
	return func() bool {
		if seen.IsZero() {
			if _, err := os.Stat(v.Record); err != nil {
				return false
			}
			seen = time.Now()
		}
		return time.Since(seen) >= grace
	}
}

// Interaction reads what the agent asked during the visit, or nil. pending
// is the tool-use id the executor saw in the CLI's output; when empty, the
// id the MCP client passed (if any) is used.
func (v *Visit) Interaction(pending string) (*agent.Interaction, error) {
	rec, err := askuser.ReadRecord(v.Record)
	if err != nil || rec == nil {
		return nil, err
	}
	if pending == "" && len(rec.ToolUseIDs) > 0 {
		pending = rec.ToolUseIDs[len(rec.ToolUseIDs)-1]
	}
	return &agent.Interaction{Questions: rec.Questions, PendingToolUseID: pending}, nil
}
