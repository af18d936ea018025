package soak

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/fakemodel"
)

// With Options.CLIRuns some runs of the load have a writer on a real agent
// CLI: Claude Code, as the agent CLIs are installed for the tests
// (scripts/tools.sh clis), against the fake model the soak runs on
// loopback (internal/fakemodel, whose reply lists every prompt of the
// conversation it was sent). Every worker is restarted with the CLIs and
// the model in its environment, as for the notices.

// cliBackend is the CLI the soak's CLI runs drive.
const cliBackend = "claude_code"

// startModel starts the fake model and restarts the workers with it.
func (s *Soak) startModel(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(s.o.Root, "scripts", "tools.sh"), "clis").Output()
	if err != nil {
		return fmt.Errorf("install the agent CLIs (scripts/tools.sh clis): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	s.model = fakemodel.New()
	s.modelEnv = []string{"TETHER_CLI_BIN=" + bin}
	vars := clitest.FakeVars(s.model)[cliBackend]
	for _, name := range sortedNames(vars) {
		s.modelEnv = append(s.modelEnv, name+"="+vars[name])
	}
	s.logf("fake model on %s for %d runs on %s; restarting the workers with it", s.model.URL(), s.o.CLIRuns, cliBackend)
	return s.restartWorkers(ctx)
}

// stopModel restarts the workers without the model, then stops it.
func (s *Soak) stopModel(ctx context.Context) error {
	if s.model == nil {
		return nil
	}
	s.modelEnv = nil
	err := s.restartWorkers(ctx)
	s.model.Close()
	return err
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cliFiles is the workspace of soak-cli after rounds rounds.
func cliFiles(rounds int) map[string]string {
	want := map[string]string{}
	var log strings.Builder
	for v := 1; v <= rounds; v++ {
		want[fmt.Sprintf("f%d.txt", v)] = fmt.Sprintf("v%d\n", v)
		fmt.Fprintf(&log, "%d\n", v)
	}
	want["log.txt"] = log.String()
	return want
}
