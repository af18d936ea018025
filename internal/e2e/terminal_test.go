package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/runapi"
)

// printedStdout is what the tool printed on stdout, exactly.
const printedStdout = "\x1b]52;c;cm0gLXJmIH4=\x07clip \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x1b[1A\x1b[2K✓ all checks passed\r\nsecond\rover \u202eolleh\n"

// assertTerminalSafe checks that out drives no terminal: no control byte
// but newline, tab and a CR ending a line, no C1 control, no bidi
// control; and that each of want is there, as visible text.
func assertTerminalSafe(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		c := out[i]
		if (c < 0x20 && c != '\n' && c != '\t' && !(c == '\r' && i+1 < len(out) && out[i+1] == '\n')) || c == 0x7f {
			t.Errorf("%s: control byte %#x at %d: %q", what, c, i, out[max(0, i-40):min(len(out), i+40)])
		}
	}
	for _, r := range out {
		if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s: control character %U", what, r)
		}
	}
	for _, w := range want {
		assert.Contains(t, out, w, "%s:\n%s", what, out)
	}
}

// TestTerminalSeesNoEscapes (security finding 4): everything an agent or
// a tool wrote that tether prints reaches the terminal as visible
// escapes, through run --follow, status (waiting, and after, to a pipe
// and to a real terminal), logs and a workspace diff on a terminal;
// --json, and a diff into a pipe, stay exact.
func TestTerminalSeesNoEscapes(t *testing.T) {
	h, dir := cliHarness(t)
	file := graphFile(t, "hostile-terminal")
	const id = "hostile-terminal-1"

	var wg sync.WaitGroup
	var follow string
	var followCode int
	wg.Add(1)
	go func() {
		defer wg.Done()
		followCode, follow = tetherCode(t, "run", file, "--id", id, "--follow")
	}()
	q := h.waitQuestion(id)
	require.Equal(t, "ask-1", q.ID)
	require.Contains(t, q.Text, "\x1b]52;c;", "the run itself keeps the text exact")

	visible := []string{`\x1b]52;c;cm0gLXJmIH4=\x07clip`, `\x1b]8;;https://evil.example/\x1b\click`, `\x1b[1A\x1b[2K✓ all checks passed`}
	waiting := h.tether(t, dir, "status", id)
	assertTerminalSafe(t, "status, waiting", waiting, append(visible, `question:   [ask-1] ask asks: ship it? turn 1: `)...)

	// The same, to a real terminal.
	term := onTerminal(t, "status", id)
	assertTerminalSafe(t, "status on a terminal", term, visible...)

	h.tether(t, dir, "answer", id, "ask-1", "yes")
	wg.Wait()
	require.Equal(t, cli.ExitOK, followCode, follow)
	t.Logf("tether run --follow:\n%s", follow)
	assertTerminalSafe(t, "run --follow", follow,
		`? ask asks [ask-1]: ship it? turn 1: \x1b]52;c;cm0gLXJmIH4=\x07clip`,
		`see \x1b]0;owned\x07 \x1b[31mred\x1b[0m`, // the tool's line: its stderr
		"run "+id+" completed at done")

	status := h.tether(t, dir, "status", id)
	assertTerminalSafe(t, "status", status, `see \x1b]0;owned\x07 \x1b[31mred\x1b[0m`)
	logs := h.tether(t, dir, "logs", id)
	t.Logf("tether logs:\n%s", logs)
	assertTerminalSafe(t, "logs", logs, append(visible,
		"-- stdout (its last 4 KiB) --\n"+`\x1b]52;c;`,
		"\r\nsecond"+`\rover \u202eolleh`, // a CRLF line end stays; a lone CR and the override are shown
		`-- stderr (its last 4 KiB) --`+"\n"+`see \x1b]0;owned\x07`,
		"-- output --\nturn 1: "+`\x1b]52;c;`)...)

	// A program reads --json: exact.
	var st runapi.State
	require.NoError(t, json.Unmarshal([]byte(h.tether(t, dir, "status", id, "--json")), &st))
	assert.Equal(t, printedStdout, st.Outputs["noisy"]["stdout"])

	// The agents' files: escaped on a terminal, exact into a pipe (a
	// patch must apply).
	assertTerminalSafe(t, "workspace diff on a terminal", onTerminal(t, "workspace", id, "diff"), `+note \x1b]52;c;aGk=\x07`)
	assert.Contains(t, h.tether(t, dir, "workspace", id, "diff"), "+note \x1b]52;c;aGk=\x07\n")
}

// onTerminal runs tether with its stdout and stderr on a pseudo-terminal
// and returns what the terminal received.
func onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	master, slave := openPTY(t)
	done := make(chan string)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		done <- b.String()
	}()
	code := cli.Main(args, slave, slave)
	require.NoError(t, slave.Close())
	select {
	case out := <-done:
		require.Equal(t, cli.ExitOK, code, "tether %v: %s", args, out)
		return out
	case <-time.After(time.Minute):
		t.Fatalf("tether %v: the terminal was not closed", args)
		return ""
	}
}

// openPTY opens a pseudo-terminal whose output is passed on as written
// (no CR added before each newline).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	require.NoError(t, err)
	tio.Oflag &^= unix.OPOST
	require.NoError(t, unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio))
	fi, err := slave.Stat()
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice, "a terminal")
	return master, slave
}
