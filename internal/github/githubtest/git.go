package githubtest

import (
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GitServer serves bare repositories over git's smart HTTP protocol with
// git's own `git http-backend` (through net/http/cgi), as GitHub serves
// them: every request must carry a valid token as the password of Basic
// authentication (any user name), and pushes are taken.
type GitServer struct {
	URL  string
	Root string
	// Valid says whether a token may read and push.
	Valid func(token string) bool

	mu      sync.Mutex
	refused int
}

// NewGitServer serves the bare repositories under root (owner/name.git).
func NewGitServer(t testing.TB, root string, valid func(string) bool) *GitServer {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to serve repositories: %v", err)
	}
	g := &GitServer{Root: root, Valid: valid}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Dir:  root,
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || !g.Valid(pass) {
			g.mu.Lock()
			g.refused++
			g.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		// http-backend takes pushes from an authenticated user.
		r.Header.Del("Authorization")
		h := *backend
		h.Env = append(append([]string(nil), backend.Env...), "REMOTE_USER="+user)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// Refused counts requests refused for their credentials.
func (g *GitServer) Refused() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

// Bare is the path of repo's bare repository.
func (g *GitServer) Bare(repo string) string { return filepath.Join(g.Root, repo+".git") }

// Git runs git in repo's bare repository and returns its output.
func (g *GitServer) Git(t testing.TB, repo string, args ...string) string {
	t.Helper()
	out, err := gitCmd(g.Bare(repo), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), repo, err, out)
	}
	return string(out)
}

// Create makes repo from the files of dir, committed on branch.
func (g *GitServer) Create(t testing.TB, repo, branch, dir string) string {
	t.Helper()
	work := t.TempDir()
	run := func(d string, args ...string) {
		if out, err := gitCmd(d, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run(work, "init", "-q", "-b", branch)
	if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	run(work, "add", "-A")
	run(work, "commit", "-q", "-m", "the first commit")
	bare := g.Bare(repo)
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	run(work, "clone", "-q", "--bare", work, bare)
	return strings.TrimSpace(g.Git(t, repo, "rev-parse", branch))
}

// gitCmd is git in dir with no user or system configuration.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	return cmd
}

// BasicAuth is the Authorization header of token, as git sends it.
func BasicAuth(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// Branch makes branch of repo: base with files added, in one commit.
func (g *GitServer) Branch(t testing.TB, repo, branch, base string, files map[string]string) string {
	t.Helper()
	work := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := gitCmd(work, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("clone", "-q", "-b", base, g.Bare(repo), ".")
	run("checkout", "-q", "-b", branch)
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("add", "-A")
	run("commit", "-q", "-m", "a person's change")
	run("push", "-q", "origin", branch)
	return strings.TrimSpace(g.Git(t, repo, "rev-parse", branch))
}
