package github

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/runstore"
)

// Commands people write in a comment, on a line of its own:
//
//	/tether run GRAPH [key=value …]
//	/tether answer [run=RUN] QUESTION TEXT
//	/tether guide [run=RUN] NODE TEXT
//	/tether cancel [run=RUN]
//
// TEXT runs to the end of the comment. run=RUN picks one of several runs
// open on the thread.
const (
	CmdRun    = "run"
	CmdAnswer = "answer"
	CmdGuide  = "guide"
	CmdCancel = "cancel"
)

// CommandPrefix starts a command line.
const CommandPrefix = "/tether"

// Command is a parsed `/tether` command.
type Command struct {
	Verb string
	// Run is the run the command names with run=RUN ("" when it names none).
	Run string
	// Graph and Inputs are run's: the graph's name in the triggers file
	// and the key=value pairs after it.
	Graph  string
	Inputs map[string]string
	// Target is the question (answer) or node (guide).
	Target string
	Text   string
}

// ErrNotACommand is a comment without a `/tether` line; ErrBadCommand a
// `/tether` line that is not one of the commands.
var (
	ErrNotACommand = errors.New("github: no /tether command")
	ErrBadCommand  = errors.New("github: not a /tether command")
)

// Usage is what a reply to a malformed command says.
const Usage = "write one of: `/tether run GRAPH [key=value …]`, `/tether answer QUESTION TEXT`, `/tether guide NODE TEXT`, `/tether cancel` (add `run=RUN` after the verb when the thread has several runs open)"

// ParseCommand finds the first line of body that starts with /tether and
// parses the command it starts; the rest of the body after it belongs to
// its TEXT.
func ParseCommand(body string) (Command, error) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(trimmed, CommandPrefix)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		tail := strings.Join(lines[i+1:], "\n")
		return parseLine(strings.TrimSpace(rest), tail)
	}
	return Command{}, ErrNotACommand
}

func parseLine(line, tail string) (Command, error) {
	verb, rest := cut(line)
	c := Command{Verb: strings.ToLower(verb)}
	if run, ok := strings.CutPrefix(peek(rest), "run="); ok && c.Verb != CmdRun {
		if runstore.ValidateRunID(run) != nil {
			return c, fmt.Errorf("%w: run=%q is not a run id; %s", ErrBadCommand, run, Usage)
		}
		c.Run = run
		_, rest = cut(rest)
	}
	text := func(s string) string {
		return strings.TrimSpace(strings.TrimSpace(s) + "\n" + tail)
	}
	switch c.Verb {
	case CmdRun:
		c.Graph, rest = cut(rest)
		if c.Graph == "" {
			return c, fmt.Errorf("%w: /tether run names no graph; %s", ErrBadCommand, Usage)
		}
		for _, f := range strings.Fields(rest) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return c, fmt.Errorf("%w: %q is not key=value; %s", ErrBadCommand, f, Usage)
			}
			if c.Inputs == nil {
				c.Inputs = map[string]string{}
			}
			c.Inputs[k] = v
		}
	case CmdAnswer, CmdGuide:
		c.Target, rest = cut(rest)
		c.Text = text(rest)
		if c.Target == "" {
			return c, fmt.Errorf("%w: /tether %s needs a %s and a text; %s", ErrBadCommand, c.Verb, map[string]string{CmdAnswer: "question id", CmdGuide: "node"}[c.Verb], Usage)
		}
	case CmdCancel:
	default:
		return c, fmt.Errorf("%w: %q; %s", ErrBadCommand, verb, Usage)
	}
	return c, nil
}

// cut splits off the first word of s.
func cut(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func peek(s string) string {
	w, _ := cut(s)
	return w
}
