package cliexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
)

func TestFingerprintIsCanonical(t *testing.T) {
	a := Fingerprint(Conversation{Backend: "claude_code", Model: "m", Tools: []string{"b", "a", "a"}})
	b := Fingerprint(Conversation{Backend: "claude_code", Model: "m", Tools: []string{"a", "b"}})
	assert.Equal(t, a, b)
	// sha256 of {"backend":"claude_code","model":"m","system_prompt":"","append_system_prompt":"",
	// "tools":["a","b"],"allowed_tools":[],"disallowed_tools":[],"permission":"","mcp_tools":[]}
	assert.Equal(t, "34bf84b6e6c8c3982cbd8f4b92a2972afaba66c5c87ac8b4d0f7c261ed4d571b", a)
	assert.NotEqual(t, a, Fingerprint(Conversation{Backend: "codex", Model: "m", Tools: []string{"a", "b"}}))
}

func TestStructured(t *testing.T) {
	assert.Equal(t, map[string]any{"a": float64(1)}, Structured(` {"a":1} `))
	assert.Equal(t, map[string]any{"a": float64(1)}, Structured("```json\n{\"a\":1}\n```"))
	assert.Nil(t, Structured("turn 1: hi"))
	assert.Nil(t, Structured(`[1,2]`))
	assert.Nil(t, Structured(`{"a":1} and more`))
}

func TestAnswerPrompt(t *testing.T) {
	p, err := Prompt(agent.Request{Prompt: "ignored", SessionID: "s",
		Answer: &agent.Answer{QuestionID: "q1", Text: "blue", PendingToolUseID: "toolu_1"}})
	require.NoError(t, err)
	assert.Equal(t, "The user answered your ask_user question (tool use toolu_1) q1:\nblue", p)
	_, err = Prompt(agent.Request{Answer: &agent.Answer{Text: "x"}})
	assert.Error(t, err, "an answer without a session")
}

func script(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "cli")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func TestRunStreamsLinesAndStdin(t *testing.T) {
	var lines []string
	out, err := Run(context.Background(), Spec{Backend: "t", Bin: script(t, "cat; echo; echo two; echo err >&2"),
		Stdin: "one", OnLine: func(b []byte) { lines = append(lines, string(b)) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two"}, lines)
	assert.Equal(t, "err", out.StderrTail)
}

func TestRunExitError(t *testing.T) {
	_, err := Run(context.Background(), Spec{Backend: "t", Bin: script(t, "echo boom >&2; exit 3")})
	var ee *agent.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, "boom", ee.StderrTail)
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	marker := "tether-cliexec-test-" + filepath.Base(t.TempDir())
	// The child ignores SIGTERM and outlives its parent's shell unless the
	// whole group is killed.
	bin := script(t, "sh -c 'trap \"\" TERM; exec sleep 300' "+marker+" &\nsleep 300\n")
	start := time.Now()
	_, err := Run(context.Background(), Spec{Backend: "t", Bin: bin, Timeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, agent.ErrTimeout)
	// The bound is the timeout's, with room for a busy machine; a group
	// that was not killed would run for five minutes.
	assert.Less(t, time.Since(start), 30*time.Second)
	// The kernel tears the killed group down a moment later: wait for it
	// with a deadline, never a fixed sleep.
	deadline := time.Now().Add(time.Minute)
	for {
		left := survivors(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out group survived its kill by a minute: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// survivors are the command lines of live processes that mention marker.
func survivors(marker string) []string {
	var left []string
	ps, _ := os.ReadDir("/proc")
	for _, p := range ps {
		b, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		st, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if strings.Contains(string(b), marker) && !strings.Contains(string(st), ") Z ") {
			left = append(left, string(b))
		}
	}
	return left
}

func TestRunStop(t *testing.T) {
	stop := time.Now().Add(300 * time.Millisecond)
	out, err := Run(context.Background(), Spec{Backend: "t", Bin: script(t, "sleep 300"),
		Stop: func() bool { return time.Now().After(stop) }, StopGrace: time.Second})
	require.NoError(t, err)
	assert.True(t, out.Stopped)
}

// A missing CLI is named with the setting a person sets (TETHER_CLI_BIN),
// never the Go field behind it.
func TestResolveMissing(t *testing.T) {
	_, err := Resolve("t", t.TempDir(), "nope")
	assert.ErrorIs(t, err, agent.ErrNotInstalled)
	assert.Contains(t, err.Error(), "TETHER_CLI_BIN")
	assert.NotContains(t, err.Error(), "BinDir")
	_, err = Resolve("t", "", "tether-no-such-program")
	assert.ErrorIs(t, err, agent.ErrNotInstalled)
	assert.Contains(t, err.Error(), "set TETHER_CLI_BIN to the directory that holds it")
	assert.NotContains(t, err.Error(), "BinDir")
}

func TestEnvironIsBasePassAndSet(t *testing.T) {
	t.Setenv("LC_TETHER_TEST", "lc")
	t.Setenv("HTTPS_PROXY", "http://proxy")
	t.Setenv("TETHER_TEST_PASSED", "p")
	t.Setenv("TETHER_TEST_HIDDEN", "h")
	t.Setenv("TETHER_TEST_SET", "worker")
	env := Environ([]string{"TETHER_TEST_PASSED", "TETHER_TEST_SET", "TETHER_TEST_ABSENT"}, "TETHER_TEST_SET=executor")
	assert.Contains(t, env, "PATH="+os.Getenv("PATH"))
	assert.Contains(t, env, "LC_TETHER_TEST=lc", "LC_* is a prefix")
	assert.Contains(t, env, "HTTPS_PROXY=http://proxy")
	assert.Contains(t, env, "TETHER_TEST_PASSED=p")
	assert.Contains(t, env, "TETHER_TEST_SET=executor")
	assert.NotContains(t, env, "TETHER_TEST_SET=worker", "what the executor sets wins")
	assert.NotContains(t, env, "TETHER_TEST_HIDDEN=h")
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "TETHER_TEST_ABSENT"), "an unset name passes nothing")
	}
}

// A program whose output is kept as bytes gets a writer instead of lines:
// nothing is split, trimmed or dropped.
func TestRunStdoutWriter(t *testing.T) {
	out := NewTailBuffer(8)
	_, err := Run(context.Background(), Spec{Backend: "t", Bin: script(t, "printf 'one\\n\\ntwo three'"), Stdout: out,
		OnLine: func([]byte) { t.Error("lines go nowhere when Stdout is set") }})
	require.NoError(t, err)
	assert.Equal(t, "wo three", string(out.Bytes()), "the buffer keeps the last 8 bytes")
}

// A relative program path is taken from the process's working directory,
// not the worker's.
func TestRunRelativeProgramFromDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.sh"), []byte("#!/bin/sh\necho ran in \"$PWD\" >&2\nexit 3\n"), 0o755))
	_, err := Run(context.Background(), Spec{Backend: "t", Bin: "./check.sh", Dir: dir})
	var ee *agent.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, "ran in "+dir, ee.StderrTail)
	_, err = Run(context.Background(), Spec{Backend: "t", Bin: "./missing.sh", Dir: dir})
	assert.ErrorIs(t, err, agent.ErrNotInstalled)
}

// A confined run starts the sandbox's helper with the run's paths (never
// the directory its program lies in: the system's /bin here), and the
// program's HOME and TMPDIR are the run's own, never the worker's.
func TestRunConfinedGoesThroughTheHelper(t *testing.T) {
	dir, home, tmp, cache := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	helper := script(t, `echo "argv: $*"; echo "HOME=$HOME"; echo "TMPDIR=$TMPDIR"`)
	var lines []string
	_, err := Run(context.Background(), Spec{
		Backend: "t", Bin: "/bin/true", Dir: dir,
		Env:         []string{"HOME=/root", "TMPDIR=/tmp", "GOCACHE=" + cache},
		Sandbox:     &sandbox.Sandbox{Helper: []string{helper, confine.Subcommand}, RO: []string{"/extra"}, Level: sandbox.LevelLandlock},
		Confinement: Confinement{Home: home, TempDir: tmp, Writable: []string{"/state"}, Readable: []string{"/cli"}},
		OnLine:      func(b []byte) { lines = append(lines, string(b)) },
	})
	require.NoError(t, err)
	require.Len(t, lines, 3)
	for _, want := range []string{"confine ", "--rw " + dir + " ", "--rw " + home + " ", "--rw " + tmp + " ", "--rw /state ",
		"--rw " + cache + " ", "--ro /cli ", "--ro /extra ", "-- /bin/true"} {
		assert.Contains(t, lines[0], want)
	}
	assert.NotContains(t, lines[0], "--ro /bin ", "the program's directory is not given")
	assert.Equal(t, "HOME="+home, lines[1])
	assert.Equal(t, "TMPDIR="+tmp, lines[2])
}

// A confined run, under the full sandbox, keeps what an unconfined one
// does: its lines and stdin, a graceful stop (SIGTERM reaches the program
// through the sandbox's helper, which bubblewrap would not pass on), and
// a timeout that kills everything it started.
func TestRunConfinedFull(t *testing.T) {
	sb := sandboxtest.New(t)
	dir, home, tmp, cli := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	// The programs are the CLI's installation, which the process reads.
	conf := Confinement{Home: home, TempDir: tmp, Readable: []string{cli}}
	script := func(t *testing.T, body string) string {
		p := filepath.Join(cli, fmt.Sprintf("cli-%d", len(body)))
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
		return p
	}
	bin := script(t, "trap 'echo stopped-gracefully; exit 0' TERM; cat; echo; echo \"uid=$(id -u) home=$HOME\"; while :; do sleep 0.05; done")
	stop := time.Now().Add(time.Second)
	var lines []string
	out, err := Run(context.Background(), Spec{Backend: "t", Bin: bin, Dir: dir, Stdin: "prompt", Sandbox: sb, Confinement: conf,
		OnLine: func(b []byte) { lines = append(lines, string(b)) },
		Stop:   func() bool { return time.Now().After(stop) }, StopGrace: 20 * time.Second})
	require.NoError(t, err)
	assert.True(t, out.Stopped)
	assert.Equal(t, []string{"prompt", fmt.Sprintf("uid=%d home=%s", sandbox.UID, home), "stopped-gracefully"}, lines)
	assert.Less(t, out.Duration, 15*time.Second, "the program ended on SIGTERM, not on the grace's SIGKILL")

	marker := "tether-cliexec-confined-" + filepath.Base(t.TempDir())
	bin = script(t, "(setsid sh -c 'trap \"\" TERM; exec sleep 300' "+marker+" &)\nsleep 300\n")
	start := time.Now()
	_, err = Run(context.Background(), Spec{Backend: "t", Bin: bin, Dir: dir, Sandbox: sb, Confinement: conf, Timeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, agent.ErrTimeout)
	assert.Less(t, time.Since(start), 30*time.Second)
	deadline := time.Now().Add(time.Minute)
	for len(survivors(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a process of the timed-out visit survived its kill by a minute: %q", survivors(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An unconfined visit's CLI keeps its temporary files in the visit's
// scratch directory too (TMPDIR), which goes with the visit, never in the
// worker's /tmp.
func TestUnconfinedVisitHasItsOwnTMPDIR(t *testing.T) {
	c := CLI{Backend: "t", Bin: script(t, `echo "TMPDIR=$TMPDIR"; test -d "$TMPDIR" && echo exists`), Options: Options{TempDir: t.TempDir()}}
	req := agent.Request{Prompt: "hi", Env: agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}}
	v, err := c.Begin(req)
	require.NoError(t, err)
	s := c.Spec(context.Background(), req, v)
	s.Env = []string{"TMPDIR=/tmp"}
	var lines []string
	s.OnLine = func(b []byte) { lines = append(lines, string(b)) }
	_, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, []string{"TMPDIR=" + filepath.Join(v.Dir, "tmp"), "exists"}, lines)
	v.Close()
	assert.NoDirExists(t, v.Dir)
}

// The ask_user reply convention that pi, gemini and grok share.
func TestAskedQuestions(t *testing.T) {
	assert.Equal(t, []agent.Question{{ID: "q1", Text: "which colour?"}, {ID: "q2", Text: "size?"}},
		AskedQuestions("I need to know.\nASK_USER: which colour?\nASK_USER: size?", nil))
	assert.Nil(t, AskedQuestions("ASK_USER: early\nthen more text", nil))
	assert.Equal(t, []agent.Question{{ID: "q1", Text: "ok?"}}, AskedQuestions(`{"ask_user":"ok?"}`, map[string]any{"ask_user": "ok?"}))
}

// A CLI reaches by default what its backend's facts name, as New was
// given them (nothing is looked up by name), and its BaseURL's host:port
// when the worker sets one.
func TestModelEndpointsComeWithTheFacts(t *testing.T) {
	f := agent.Facts{Name: "t", CLI: "t-cli", ModelEndpoints: []string{"model.example:443"}}
	e := New(f, Options{}, nil, nil, false)
	assert.Equal(t, f, e.CLI.Facts)
	assert.Equal(t, []string{"model.example:443"}, e.CLI.ModelEndpoints())
	e = New(f, Options{BaseURL: "http://127.0.0.1:8080/v1"}, nil, nil, false)
	assert.Equal(t, []string{"127.0.0.1:8080"}, e.CLI.ModelEndpoints())
	assert.Empty(t, New(agent.Facts{Name: "u"}, Options{}, nil, nil, false).CLI.ModelEndpoints(), "no default, nothing reached")
}

// The forge's credentials reach no process, whatever names them.
func TestEnvironNeverPassesTheForgesCredentials(t *testing.T) {
	t.Setenv("TETHER_GITHUB_TOKEN", "ghp_canary")
	t.Setenv("TETHER_GITHUB_APP_KEY", "/etc/tether/app.pem")
	t.Setenv("TETHER_GITHUB_WEBHOOK_SECRET", "s")
	env := Environ([]string{"TETHER_*", "TETHER_GITHUB_TOKEN"})
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "TETHER_GITHUB_"), "%s reached a process", kv)
	}
}

func TestANodeThatMayNotAskGetsNoConvention(t *testing.T) {
	c := CLI{Options: Options{AskUser: []string{"/opt/tether/tether-ask-user"}}}
	asks := agent.Request{Settings: agent.Settings{AppendSystemPrompt: "be brief"}}
	never := agent.Request{Settings: agent.Settings{AppendSystemPrompt: "be brief", NoAskUser: true}}
	assert.Contains(t, c.Merge(asks, Defaults{Convention: true}).AppendSystemPrompt, AskUserInstructions)
	assert.Equal(t, "be brief", c.Merge(never, Defaults{Convention: true}).AppendSystemPrompt)
	assert.Equal(t, []string{"tether/ask_user"}, c.MCPTools(asks))
	assert.Empty(t, c.MCPTools(never))
	assert.Nil(t, c.AskUserFor(never))
}
