package e2e

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/forge"
	"github.com/tether-run/tether/internal/github/githubtest"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

const (
	ghRepo   = "acme/widgets"
	ghSecret = "webhook-secret-of-the-test-app"
)

// ghLoop is a GitHub double, the console taking its webhooks, and
// workers holding the App's key.
type ghLoop struct {
	h       *harness
	fake    *fakemodel.Server
	gh      *githubtest.Server
	console *consoleProc
	hook    string
	logs    *testenv.SyncBuffer
	canary  string
}

// newGHLoop starts GitHub's double with the repository of
// testdata/issuetopr, `tether console` with a triggers file naming the
// graph (examples/issue-to-pr.yaml when ""), and a worker with the App
// and a github notice endpoint (its agent CLIs on the fake model).
func newGHLoop(t *testing.T, graphSrc string) *ghLoop {
	t.Helper()
	goEnv := goCaches(t)
	h := newHarness(t, "")
	l := &ghLoop{h: h, fake: cliBackends(t, h), logs: &testenv.SyncBuffer{}, canary: "ghs_canary" + token() + "_"}
	l.gh = githubtest.New(t, ghRepo, filepath.Join(testenv.Root(), "internal", "e2e", "testdata", "issuetopr"), l.canary)

	if graphSrc == "" {
		// The writer with permissions: full, so that its shell can look
		// for the token everywhere.
		src, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", "issue-to-pr.yaml"))
		require.NoError(t, err)
		graphSrc = strings.Replace(string(src), "permissions: edit", "permissions: full", 1)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "issue-to-pr.yaml"), []byte(graphSrc), 0o644))
	triggers := fmt.Sprintf("graphs:\n  fix: issue-to-pr.yaml\ntriggers:\n  - {repo: %s, label: tether, graph: fix}\n  - {repo: %s, command: run}\n", ghRepo, ghRepo)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "triggers.yaml"), []byte(triggers), 0o644))
	l.console = startConsole(t, h, []string{"TETHER_TRIGGERS=" + filepath.Join(dir, "triggers.yaml"), "TETHER_GITHUB_WEBHOOK_SECRET=" + ghSecret})
	l.hook = l.console.URL + "/hooks/github"

	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f, err := forge.New(forge.Config{API: l.gh.URL, Git: l.gh.Git.URL, AppID: l.gh.AppID, AppKey: l.gh.Key, Logger: logger})
	require.NoError(t, err)
	eps, err := notify.ParseEndpoints("github=github")
	require.NoError(t, err)
	h.notify, err = notify.NewSender(eps, []byte("notice-secret-of-the-test"), l.console.URL, nil, 0)
	require.NoError(t, err)
	h.hostOptions = func(o *workerhost.Options) {
		o.GitHub, o.ConsoleURL, o.Logger = f, l.console.URL, logger
	}
	for _, kv := range goEnv {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	h.startWorker()
	return l
}

func (l *ghLoop) deliver(t *testing.T, d githubtest.Delivery) githubtest.Sent {
	t.Helper()
	sent := githubtest.Deliver(t, l.hook, ghSecret, d)
	require.Equal(t, http.StatusAccepted, sent.Status, "delivery %s: %s", d.Event, sent.Body)
	return sent
}

// probe is a shell command for the agent: every token of the App it can
// find in any process's environment or in the files it can read.
func (l *ghLoop) probe() string {
	pat := l.canary + `[0-9a-f]\{24\}`
	return fmt.Sprintf(`(grep -a -h -o '%s' /proc/[0-9]*/environ; grep -r -a -h -o '%s' . "$HOME" /tmp /etc /run /var /root "$CLAUDE_CONFIG_DIR" 2>/dev/null) | sort -u | sed 's/^/found /'; echo canary-tried`, pat, pat)
}

// The issue's text: what a person writes, and the fake model's cues. On
// turn 1 of the writer's conversation it fixes the sum; on turn 2, which
// the run reaches only if the second visit continues the first's
// conversation, it adds the test the review asks for. The cue of turn 2 is
// in this first prompt only.
func (l *ghLoop) issueBody() string {
	return "Sum leaves out the first number: Sum([]int{1, 2, 3}) is 5, not 6.\n" +
		"EDIT_FILE@1: sum/sum.go\nOLD:\n\tfor _, x := range xs[1:] {\nNEW:\n\tfor _, x := range xs {\nEND_EDIT\n" +
		"WRITE_FILE@2: sum/empty_test.go\npackage sum\n\nimport \"testing\"\n\nfunc TestSumOfNothing(t *testing.T) {\n\tif got := Sum(nil); got != 0 {\n\t\tt.Fatalf(\"Sum(nil) = %d, want 0\", got)\n\t}\n}\nEND_FILE\n" +
		fakemodel.CueShell + " " + l.probe()
}

// TestIssueToPullRequest is the whole loop: an issue labelled tether
// starts a run (the delivery sent twice starts one); the writer fixes the
// failing test; the run pushes its commit to tether/RUN and opens a pull
// request that fixes the issue, and waits for its review. The worker is
// killed and its disks wiped; a non-collaborator's `/tether cancel`
// changes nothing; a review that requests changes sends the writer round
// again on a new worker, continuing its own conversation (the fake model
// sees its first turn and the review), and its new commit goes to the
// same pull request; an approval completes the run. A forged delivery is
// refused. The App's tokens are nowhere an agent, a log, a blob or a page
// shows.
func TestIssueToPullRequest(t *testing.T) {
	started := time.Now()
	l := newGHLoop(t, "")
	h, gh := l.h, l.gh

	issue := gh.OpenIssue("Sum leaves out the first number", l.issueBody(), "alice")
	labeled := gh.Labeled(issue, "tether", "alice")
	first := l.deliver(t, labeled)
	run := github.RunID(ghRepo, issue, labeled.ID)
	assert.Contains(t, first.Body, run)
	again := l.deliver(t, labeled)
	assert.Contains(t, again.Body, "handled already", "GitHub's redelivery of the same delivery")

	// Forged: signed with another secret.
	forged := githubtest.DeliverSigned(t, l.hook, "sha256="+strings.Repeat("ab", 32), gh.Labeled(issue, "tether", "mallory"))
	assert.Equal(t, http.StatusUnauthorized, forged.Status)

	q := h.waitQuestion(run)
	require.Equal(t, "review-1", q.ID, "the run waits for the pull request's review")
	branch := github.Branch(run)
	pr, ok := gh.PullOf(branch)
	require.True(t, ok, "a pull request from %s", branch)
	assert.Contains(t, pr.Body, fmt.Sprintf("Fixes #%d", issue))
	assert.Contains(t, pr.Body, "writer 1 → tests 1", "the path the run took")
	assert.Contains(t, pr.Body, l.console.URL+"/runs/"+run, "its console link")
	assert.Equal(t, "Fix #1: Sum leaves out the first number", pr.Title)
	assert.Eventually(t, func() bool {
		for _, c := range gh.Comments(pr.Number) {
			if strings.Contains(c.Body, "/tether answer review-1 TEXT") {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the run's question, posted on its pull request")
	log1 := gh.Git.Git(t, ghRepo, "log", "--format=%s", branch)
	assert.Equal(t, "writer visit 1\nthe first commit\n", log1)

	// Someone without access tries to steer the run.
	l.deliver(t, gh.Commented(issue, "mallory", "NONE", "/tether cancel"))

	// The review. Its last cue keeps the writer's final answer back for a
	// few seconds, once its tools ran: the worker dies then, in the middle
	// of the visit, and its disks with it.
	reviewText := "add a test for the empty slice\n" + fakemodel.CueShell + " " + l.probe() + "\n" + fakemodel.CueSleepAfterTool + " 5s"
	l.deliver(t, gh.Reviewed(pr.Number, "bob", "COLLABORATOR", "changes_requested", reviewText,
		githubtest.ReviewComment{Path: "sum/sum.go", Line: 7, Body: "and keep this loop"}))
	require.Eventually(t, func() bool {
		for _, r := range l.fake.Turns() {
			if len(r.Prompts) == 2 && r.AfterToolResult && strings.Contains(r.Prompts[1], "add a test for the empty slice") {
				return true
			}
		}
		return false
	}, runWait, 50*time.Millisecond, "the writer's second visit ran its tools")
	h.stopWorker()
	h.startWorker()
	q = waitQuestionID(t, h, run, "review-2")
	log2 := gh.Git.Git(t, ghRepo, "log", "--format=%s", branch)
	assert.Equal(t, "writer visit 2\nwriter visit 1\nthe first commit\n", log2, "the new commit went to the same branch")
	require.Len(t, gh.Pulls(), 1, "the same pull request")

	// The writer's second visit continued its own conversation.
	turns := conversationTurns(l.fake, "Sum leaves out the first number")
	require.NotEmpty(t, turns)
	last := turns[len(turns)-1]
	require.Len(t, last.Prompts, 2, "the writer's second visit is turn 2 of its conversation")
	assert.Contains(t, last.Prompts[1], "add a test for the empty slice")
	assert.Contains(t, last.Prompts[1], "sum/sum.go:7: and keep this loop", "the review's line comments")
	for i, p := range last.Prompts {
		t.Logf("the writer's turn %d, as the model got it:\n%s", i+1, strings.Split(p, "\nEDIT_FILE@1")[0])
	}

	l.deliver(t, gh.Reviewed(pr.Number, "bob", "COLLABORATOR", "approved", "thanks"))
	res, err := h.result(h.c.GetWorkflow(t.Context(), run, ""))
	require.NoError(t, err)
	assert.Equal(t, "writer>tests>review>writer>tests>review>done", pathString(res))

	// The pushed branch builds and its tests pass: the fix and the test.
	out := gh.Git.Git(t, ghRepo, "show", branch+":sum/empty_test.go")
	assert.Contains(t, out, "TestSumOfNothing")
	assert.Contains(t, gh.Git.Git(t, ghRepo, "show", branch+":sum/sum.go"), "for _, x := range xs {")

	// The thread: one status comment, edited; mallory got one reply and
	// the run went on; a commit status on the head.
	comments := gh.Comments(issue)
	var status, replies []githubtest.Comment
	for _, c := range comments {
		switch {
		case strings.Contains(c.Body, "<!-- tether:run:"+run+" -->"):
			status = append(status, c)
		case strings.Contains(c.Body, "@mallory"):
			replies = append(replies, c)
		}
	}
	require.Len(t, status, 1, "one status comment: %v", comments)
	assert.Contains(t, status[0].Body, "completed")
	assert.Positive(t, status[0].Edits)
	require.Len(t, replies, 1, "one reply to the non-collaborator")
	assert.Contains(t, replies[0].Body, "owners, members and collaborators")
	head := strings.TrimSpace(gh.Git.Git(t, ghRepo, "rev-parse", branch))
	var headStatus string
	for _, s := range gh.Statuses() {
		if s.SHA == head {
			headStatus = s.State
		}
	}
	assert.Equal(t, "success", headStatus, "the head's commit status")
	assert.Empty(t, gh.Refused(), "only endpoints GitHub documents")
	assert.Contains(t, l.console.out.String(), "signature does not match", "the forged delivery is logged")

	l.checkNoToken(t, run)
	h.recordHistory("github-issue-to-pr", run)
	h.recordHistory("github-delivery-start", github.DeliveryWorkflowID(labeled.ID))
	t.Logf("the loop took %s; GitHub's requests:\n%s", time.Since(started).Round(time.Second), requestsLog(gh))
	t.Logf("git log of %s:\n%s", branch, gh.Git.Git(t, ghRepo, "log", "--format=%h %s (%an, parent %p)", branch))
	if final, ok := gh.PullOf(branch); ok {
		t.Logf("pull request #%d %q:\n%s", final.Number, final.Title, final.Body)
	}
	t.Logf("the status comment (edited %d times):\n%s", status[0].Edits, status[0].Body)
}

func requestsLog(gh *githubtest.Server) string {
	var b strings.Builder
	for _, r := range gh.Requests() {
		fmt.Fprintln(&b, r)
	}
	return b.String()
}

// waitQuestionID waits until run asks question id.
func waitQuestionID(t *testing.T, h *harness, run, id string) runapi.PendingQuestion {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for time.Now().Before(deadline) {
		if q := h.waitQuestion(run); q.ID == id {
			return q
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("run %s never asked %s", run, id)
	return runapi.PendingQuestion{}
}

// checkNoToken looks for every token the App minted where none may be:
// what the agent saw and sent (its probe of every process's environment
// and its files ran), the workers' and the console's logs, the run's page,
// and every blob of the store, unpacked.
func (l *ghLoop) checkNoToken(t *testing.T, run string) {
	t.Helper()
	tokens := l.gh.Tokens()
	require.NotEmpty(t, tokens, "the App minted tokens")
	var seen strings.Builder
	for _, r := range l.fake.Requests() {
		seen.Write(r.Body)
		seen.WriteString("\n")
	}
	assert.Contains(t, seen.String(), "canary-tried", "the agent's probe ran")
	resp, err := http.Get(l.console.URL + "/runs/" + run)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	places := map[string]string{
		"what the model saw": seen.String(), "the workers' logs": l.logs.String(),
		"the console's output": l.console.out.String(), "the run's page": string(page),
		"the store": storeText(t, strings.TrimPrefix(l.h.blobURL, "file://")),
	}
	for where, text := range places {
		for _, tok := range tokens {
			assert.NotContains(t, text, tok, "a token of the App in %s", where)
		}
		assert.NotContains(t, text, "PRIVATE KEY", "the App's key in %s", where)
	}
}

// storeText is every file of a file store, with session archives (zstd)
// and workspace packs (zlib objects) unpacked.
func storeText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.Write(data)
		if i := bytes.Index(data, []byte{0x28, 0xb5, 0x2f, 0xfd}); i >= 0 {
			if out, err := dec.DecodeAll(data[i:], nil); err == nil {
				b.Write(out)
			}
		}
		if bytes.HasPrefix(data, []byte("PACK")) {
			b.WriteString(packText(data))
		}
		return nil
	}))
	return b.String()
}

// packText inflates the objects of a git pack of whole objects.
func packText(data []byte) string {
	var b strings.Builder
	n := binary.BigEndian.Uint32(data[8:12])
	r := bytes.NewReader(data[12:])
	for range n {
		c, err := r.ReadByte()
		if err != nil {
			break
		}
		for c&0x80 != 0 {
			if c, err = r.ReadByte(); err != nil {
				return b.String()
			}
		}
		z, err := zlib.NewReader(r)
		if err != nil {
			break
		}
		out, _ := io.ReadAll(z)
		b.Write(out)
	}
	return b.String()
}

// A scripted run started by `/tether run`, steered from the thread: a
// note and an answer from a collaborator act as `tether guide` and
// `tether answer` do (each gets its reply), and closing the run's pull
// request unmerged cancels the run.
func TestGitHubCommands(t *testing.T) {
	l := newGHLoop(t, graphYAML(t, "steer"))
	h, gh := l.h, l.gh
	issue := gh.OpenIssue("Steer me", "", "alice")
	start := gh.Commented(issue, "bob", "MEMBER", "/tether run fix")
	l.deliver(t, start)
	run := github.RunID(ghRepo, issue, start.ID)
	q := h.waitQuestion(run)
	require.Equal(t, "ask-1", q.ID)

	reply := func(n int, who string) string {
		t.Helper()
		var found string
		require.Eventually(t, func() bool {
			for _, c := range gh.Comments(n) {
				if strings.Contains(c.Body, "@"+who+":") && !strings.Contains(found, c.Body) {
					found += c.Body + "\n"
				}
			}
			return found != ""
		}, time.Minute, 100*time.Millisecond, "a reply to %s", who)
		return found
	}
	l.deliver(t, gh.Commented(issue, "carol", "COLLABORATOR", "/tether guide writer keep it short"))
	assert.Contains(t, reply(issue, "carol"), "note sent to node writer")
	l.deliver(t, gh.Commented(issue, "dave", "OWNER", "/tether answer nope yes"))
	assert.Contains(t, reply(issue, "dave"), "refused the answer", "the run's own refusal, as `tether answer` prints it")
	l.deliver(t, gh.Commented(issue, "erin", "COLLABORATOR", "/tether answer ask-1 go"))
	assert.Contains(t, reply(issue, "erin"), "answered ask-1")

	waitQuestionID(t, h, run, "review-1")
	pr, ok := gh.PullOf(github.Branch(run))
	require.True(t, ok)
	assert.Contains(t, pr.Body, fmt.Sprintf("Fixes #%d", issue), "a run started by a comment on an issue fixes it too")
	st := h.state(run)
	require.NotEmpty(t, st.Path)
	l.deliver(t, gh.Closed(pr.Number, false, "bob"))
	_, err := h.result(h.c.GetWorkflow(t.Context(), run, ""))
	require.Error(t, err, "closing the pull request cancels the run")
	assert.Eventually(t, func() bool {
		cp, err := h.runs.Latest(t.Context(), run)
		return err == nil && cp.Status == "canceled"
	}, time.Minute, 200*time.Millisecond)
	cp, err := h.runs.Latest(t.Context(), run)
	require.NoError(t, err)
	var guided bool
	for _, s := range cp.Path {
		if s.Node == "writer" && len(s.Guidance) > 0 && s.Guidance[0].Text == "keep it short" && s.Guidance[0].By == "github:carol" {
			guided = true
		}
	}
	assert.True(t, guided, "the writer's visit took the note, from github:carol: %+v", cp.Path)
	h.recordHistory("github-commands-canceled", run)
}

// A `/tether run` comment on a person's pull request runs on its head:
// the run's files are that branch's, its own pull request targets that
// branch (and says no "Fixes"), and merging the run's pull request ends
// the run.
func TestGitHubRunOnAPullRequestThenMerge(t *testing.T) {
	l := newGHLoop(t, graphYAML(t, "on-a-branch"))
	h, gh := l.h, l.gh
	gh.Git.Branch(t, ghRepo, "feature", "main", map[string]string{"feature.txt": "a feature\n"})
	theirs := gh.OpenPull("feature", "main", "A feature", "alice")
	start := gh.Commented(theirs, "alice", "OWNER", "/tether run fix")
	l.deliver(t, start)
	run := github.RunID(ghRepo, theirs, start.ID)
	waitQuestionID(t, h, run, "review-1")

	pr, ok := gh.PullOf(github.Branch(run))
	require.True(t, ok)
	assert.Equal(t, "feature", pr.Base, "the run's pull request targets the branch it ran on")
	assert.NotContains(t, pr.Body, "Fixes #")
	assert.Equal(t, "a feature\nseen\n", gh.Git.Git(t, ghRepo, "show", github.Branch(run)+":feature.txt"), "the run's files were the pull request's head")

	l.deliver(t, gh.Closed(pr.Number, true, "alice"))
	res, err := h.result(h.c.GetWorkflow(t.Context(), run, ""))
	require.NoError(t, err, "a merge ends the run")
	assert.Equal(t, "note>review>done", pathString(res))
	cp, err := h.runs.Latest(t.Context(), run)
	require.NoError(t, err)
	assert.Equal(t, "merged", cp.Outputs["review"]["verdict"])
}
