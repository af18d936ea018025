package workflows

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tether-run/tether/internal/runapi"
)

// logs keeps what the workflow logged, for tests to read: the warnings a
// run gives say what went wrong and what happens instead.
type logs struct {
	mu      sync.Mutex
	entries []logEntry
}

type logEntry struct {
	level, msg string
	keyvals    []any
}

func (l *logs) add(level, msg string, keyvals []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, logEntry{level, msg, keyvals})
}

func (l *logs) Debug(msg string, keyvals ...any) { l.add("DEBUG", msg, keyvals) }
func (l *logs) Info(msg string, keyvals ...any)  { l.add("INFO", msg, keyvals) }
func (l *logs) Warn(msg string, keyvals ...any)  { l.add("WARN", msg, keyvals) }
func (l *logs) Error(msg string, keyvals ...any) { l.add("ERROR", msg, keyvals) }

// at are the entries of level or worse (WARN: warnings and errors), each
// as "message key=value …".
func (l *logs) at(level string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		if e.level == level || (level == "WARN" && e.level == "ERROR") {
			var b strings.Builder
			b.WriteString(e.msg)
			for i := 0; i+1 < len(e.keyvals); i += 2 {
				fmt.Fprintf(&b, " %v=%v", e.keyvals[i], e.keyvals[i+1])
			}
			out = append(out, b.String())
		}
	}
	return out
}

// A run where nothing goes wrong warns of nothing: every warning means
// something an operator should know.
func (s *GraphRunSuite) TestAHealthyRunWarnsOfNothing() {
	for _, src := range []string{persistLoop, loopGraph, fanoutGraph, branchLoop, filesGraph, nestedFanout} {
		s.SetupTest()
		_, err := s.run(src, nil)
		s.Require().NoError(err)
		s.Empty(s.logs.at("WARN"), src)
	}
	// Superseded slots and an answered question's pause blob deleted.
	s.SetupTest()
	s.answerWhenAsked("writer-1-q1", "yes", func() {})
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(strings.Replace(persistLoop, `"draft {{.visit}}"`, `"draft {{.visit}}{{if eq .visit 1}} ASK: ok?{{end}}"`, 1)), Options: runapi.Options{SessionHistory: -1}})
	s.Require().NoError(s.env.GetWorkflowError())
	s.Len(s.store.deletedKeys(), 3, "the pause blob and two superseded slots")
	s.Empty(s.logs.at("WARN"))
}

// Each restart of a visit is logged with its number and why; a visit
// planned to continue a conversation that ran fresh says why.
func (s *GraphRunSuite) TestWarningsSayWhatHappened() {
	s.wipeOnJudge(nil)
	s.failVisits(maxVisitRestarts, mayPassErr)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	var restarts []string
	for _, w := range s.logs.at("WARN") {
		if strings.HasPrefix(w, "visit failed in a way that may pass; starting it again") {
			restarts = append(restarts, w)
		}
	}
	s.Require().Len(restarts, maxVisitRestarts)
	for i, w := range restarts {
		s.Contains(w, fmt.Sprintf("node=writer visit=2 restart=%d error=", i+1))
		s.Contains(w, "the CLI crashed")
	}

	s.SetupTest()
	s.wipeOnJudge(func() {
		cp, err := s.runs.Latest(s.T().Context(), "run-1")
		s.Require().NoError(err)
		s.Require().NoError(s.store.Store.Delete(s.T().Context(), cp.NodeSessions["writer"].StateRef))
	})
	_, err = s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Contains(s.logs.at("WARN"), "session not resumed; the visit ran fresh node=writer visit=2 plan=unpack_own_slot reason=the session's blob is gone from the store")
}
