// Package githubtest is GitHub for tests: a REST API server implementing
// exactly the endpoints Tether uses (an App's installation tokens, issue
// comments, pull requests, review comments, commit statuses) with the
// request and response shapes of GitHub's REST documentation, refusing
// anything else; a git server (git http-backend) that takes those tokens;
// and webhook deliveries built from GitHub's documented payloads and
// signed as GitHub signs them. Every request is recorded.
package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request the API got, and how it answered.
type Request struct {
	Method, Path string
	Status       int
	Body         string
	// Unknown says no endpoint of the API's took it.
	Unknown bool
}

func (r Request) String() string { return fmt.Sprintf("%s %s → %d", r.Method, r.Path, r.Status) }

// Comment is an issue or pull request comment.
type Comment struct {
	ID     int64
	Number int
	Body   string
	Author string
	// Edits counts the times it was edited.
	Edits int
}

// Pull is a pull request.
type Pull struct {
	Number            int
	Title, Body       string
	Head, Base        string
	Draft             bool
	State             string
	Merged            bool
	Author            string
	Edits             int
	ReviewComments    map[int64][]ReviewComment
	reviewAssociation string
}

// ReviewComment is a comment of a review, on a line of a file.
type ReviewComment struct {
	Path string
	Line int
	Body string
}

// Status is a commit status.
type Status struct {
	SHA, State, Description, Context, TargetURL string
}

// Server is the REST API.
type Server struct {
	URL string
	// Repo is owner/name, the one repository of the App's installation.
	Repo          string
	DefaultBranch string
	AppID         int64
	Installation  int64
	// Key is the App's private key (PEM), for the worker.
	Key []byte
	// TokenPrefix starts every installation token minted: a canary a
	// test searches for where no token may be.
	TokenPrefix string
	// Git is the repository server the API's pull requests read.
	Git *GitServer

	pub *rsa.PublicKey
	mu  sync.Mutex
	// tokens maps each token minted to when it expires.
	tokens   map[string]time.Time
	requests []Request
	next     int64
	number   int
	issues   map[int]*issue
	comments []*Comment
	pulls    map[int]*Pull
	statuses []Status
}

type issue struct {
	Number      int
	Title, Body string
	Author      string
	Labels      []string
	IsPull      bool
}

// New starts the API for repo, with an App of its own and a git server
// holding the repository's files from dir on its default branch main.
func New(t testing.TB, repo, dir, tokenPrefix string) *Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Repo: repo, DefaultBranch: "main", AppID: 4242, Installation: 90210, TokenPrefix: tokenPrefix,
		Key: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), pub: &key.PublicKey,
		tokens: map[string]time.Time{}, issues: map[int]*issue{}, pulls: map[int]*Pull{}, next: 1000}
	s.Git = NewGitServer(t, t.TempDir(), s.validToken)
	s.Git.Create(t, repo, s.DefaultBranch, dir)
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests are the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Tokens are the installation tokens minted so far.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.tokens {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func (s *Server) validToken(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

// Comments are the comments on number.
func (s *Server) Comments(number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Number == number {
			out = append(out, *c)
		}
	}
	return out
}

// Pulls are the pull requests, by number.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pull
	for _, p := range s.pulls {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pull) int { return a.Number - b.Number })
	return out
}

// Statuses are the commit statuses set, oldest first.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

func (s *Server) id() int64 {
	s.next++
	return s.next
}

// OpenIssue opens an issue.
func (s *Server) OpenIssue(title, body, author string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.number++
	n := s.number
	s.issues[n] = &issue{Number: n, Title: title, Body: body, Author: author}
	return n
}

var (
	routeTokens        = regexp.MustCompile(`^/app/installations/(\d+)/access_tokens$`)
	routeComments      = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$`)
	routeComment       = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$`)
	routePulls         = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/pulls$`)
	routePull          = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/pulls/(\d+)$`)
	routeReviewComment = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews/(\d+)/comments$`)
	routeStatus        = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/statuses/([0-9a-f]{40})$`)
)

// serve answers one request, recording it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	s.route(rec, r, body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Status: rec.status, Body: string(body), Unknown: rec.unknown})
	s.mu.Unlock()
}

type recorder struct {
	http.ResponseWriter
	status  int
	unknown bool
}

func (r *recorder) WriteHeader(c int) { r.status = c; r.ResponseWriter.WriteHeader(c) }

func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	if m := routeTokens.FindStringSubmatch(path); m != nil && r.Method == http.MethodPost {
		s.mintToken(w, r, m[1])
		return
	}
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repoOK := func(repo string) bool { return strings.EqualFold(repo, s.Repo) }
	switch m := (matcher{path: path}); {
	case m.is(routeComments) && repoOK(m.g[1]) && r.Method == http.MethodGet:
		n, _ := strconv.Atoi(m.g[2])
		s.listComments(w, r, n)
	case m.is(routeComments) && repoOK(m.g[1]) && r.Method == http.MethodPost:
		n, _ := strconv.Atoi(m.g[2])
		var in struct{ Body string }
		if json.Unmarshal(body, &in) != nil || in.Body == "" {
			unprocessable(w, "Validation Failed: body is missing")
			return
		}
		c := &Comment{ID: s.id(), Number: n, Body: in.Body, Author: "tether[bot]"}
		s.comments = append(s.comments, c)
		writeJSON(w, http.StatusCreated, s.commentJSON(c))
	case m.is(routeComment) && repoOK(m.g[1]) && r.Method == http.MethodPatch:
		id, _ := strconv.ParseInt(m.g[2], 10, 64)
		var in struct{ Body string }
		if json.Unmarshal(body, &in) != nil || in.Body == "" {
			unprocessable(w, "Validation Failed: body is missing")
			return
		}
		for _, c := range s.comments {
			if c.ID == id {
				c.Body = in.Body
				c.Edits++
				writeJSON(w, http.StatusOK, s.commentJSON(c))
				return
			}
		}
		notFound(w)
	case m.is(routePulls) && repoOK(m.g[1]) && r.Method == http.MethodGet:
		head, state := r.URL.Query().Get("head"), r.URL.Query().Get("state")
		var out []any
		for _, n := range sortedPulls(s.pulls) {
			p := s.pulls[n]
			if head != "" && head != strings.Split(s.Repo, "/")[0]+":"+p.Head {
				continue
			}
			if state != "all" && p.State != "open" {
				continue
			}
			out = append(out, s.pullJSON(p))
		}
		writeJSON(w, http.StatusOK, orEmpty(out))
	case m.is(routePulls) && repoOK(m.g[1]) && r.Method == http.MethodPost:
		var in struct {
			Title, Head, Base, Body string
			Draft                   bool
		}
		if json.Unmarshal(body, &in) != nil || in.Title == "" || in.Head == "" || in.Base == "" {
			unprocessable(w, "Validation Failed: title, head and base are required")
			return
		}
		for _, p := range s.pulls {
			if p.Head == in.Head && p.State == "open" {
				unprocessable(w, "Validation Failed: A pull request already exists for "+strings.Split(s.Repo, "/")[0]+":"+in.Head+".")
				return
			}
		}
		if s.sha(in.Head) == "" {
			unprocessable(w, "Validation Failed: head "+in.Head+" does not exist")
			return
		}
		if s.sha(in.Head) == s.sha(in.Base) {
			unprocessable(w, "Validation Failed: No commits between "+in.Base+" and "+in.Head)
			return
		}
		s.number++
		n := s.number
		p := &Pull{Number: n, Title: in.Title, Head: in.Head, Base: in.Base, Body: in.Body, Draft: in.Draft, State: "open", Author: "tether[bot]", ReviewComments: map[int64][]ReviewComment{}}
		s.pulls[n] = p
		s.issues[n] = &issue{Number: n, Title: in.Title, Body: in.Body, Author: p.Author, IsPull: true}
		writeJSON(w, http.StatusCreated, s.pullJSON(p))
	case m.is(routePull) && repoOK(m.g[1]) && (r.Method == http.MethodGet || r.Method == http.MethodPatch):
		n, _ := strconv.Atoi(m.g[2])
		p, ok := s.pulls[n]
		if !ok {
			notFound(w)
			return
		}
		if r.Method == http.MethodPatch {
			var in struct{ Title, Body, State *string }
			if json.Unmarshal(body, &in) != nil {
				unprocessable(w, "Problems parsing JSON")
				return
			}
			if in.Title != nil {
				p.Title = *in.Title
			}
			if in.Body != nil {
				p.Body = *in.Body
			}
			if in.State != nil {
				p.State = *in.State
			}
			p.Edits++
		}
		writeJSON(w, http.StatusOK, s.pullJSON(p))
	case m.is(routeReviewComment) && repoOK(m.g[1]) && r.Method == http.MethodGet:
		n, _ := strconv.Atoi(m.g[2])
		id, _ := strconv.ParseInt(m.g[3], 10, 64)
		p, ok := s.pulls[n]
		if !ok {
			notFound(w)
			return
		}
		var out []any
		for i, c := range p.ReviewComments[id] {
			out = append(out, map[string]any{"id": id*100 + int64(i), "pull_request_review_id": id, "path": c.Path, "line": c.Line,
				"original_line": c.Line, "side": "RIGHT", "body": c.Body, "user": user("reviewer"), "author_association": p.reviewAssociation})
		}
		writeJSON(w, http.StatusOK, orEmpty(out))
	case m.is(routeStatus) && repoOK(m.g[1]) && r.Method == http.MethodPost:
		var in struct {
			State       string `json:"state"`
			TargetURL   string `json:"target_url"`
			Description string `json:"description"`
			Context     string `json:"context"`
		}
		if json.Unmarshal(body, &in) != nil || !slices.Contains([]string{"error", "failure", "pending", "success"}, in.State) {
			unprocessable(w, "Validation Failed: state is not included in the list")
			return
		}
		st := Status{SHA: m.g[2], State: in.State, Description: in.Description, Context: in.Context, TargetURL: in.TargetURL}
		s.statuses = append(s.statuses, st)
		writeJSON(w, http.StatusCreated, map[string]any{"id": s.id(), "state": st.State, "description": st.Description,
			"target_url": st.TargetURL, "context": st.Context, "creator": user("tether[bot]"), "created_at": now(), "updated_at": now()})
	default:
		if rec, ok := w.(*recorder); ok {
			rec.unknown = true
		}
		notFound(w)
	}
}

type matcher struct {
	path string
	g    []string
}

func (m *matcher) is(re *regexp.Regexp) bool {
	m.g = re.FindStringSubmatch(m.path)
	return m.g != nil
}

func sortedPulls(m map[int]*Pull) []int {
	var out []int
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, n int) {
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page <= 0 {
		page = 1
	}
	var all []any
	for _, c := range s.comments {
		if c.Number == n {
			all = append(all, s.commentJSON(c))
		}
	}
	from, to := min((page-1)*perPage, len(all)), min(page*perPage, len(all))
	if to < len(all) {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	writeJSON(w, http.StatusOK, orEmpty(all[from:to]))
}

func (s *Server) commentJSON(c *Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "node_id": fmt.Sprintf("IC_%d", c.ID), "body": c.Body, "user": user(c.Author),
		"url":        fmt.Sprintf("%s/repos/%s/issues/comments/%d", s.URL, s.Repo, c.ID),
		"html_url":   fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", s.Repo, c.Number, c.ID),
		"issue_url":  fmt.Sprintf("%s/repos/%s/issues/%d", s.URL, s.Repo, c.Number),
		"created_at": now(), "updated_at": now(), "author_association": "NONE",
	}
}

func (s *Server) repoJSON() map[string]any {
	owner, name, _ := strings.Cut(s.Repo, "/")
	return map[string]any{"id": 1296269, "name": name, "full_name": s.Repo, "private": false, "owner": user(owner),
		"html_url": "https://github.com/" + s.Repo, "clone_url": s.Git.URL + "/" + s.Repo + ".git", "default_branch": s.DefaultBranch}
}

// sha is branch's commit in the git server's repository ("" when none).
func (s *Server) sha(branch string) string {
	out, err := gitCmd(s.Git.Bare(s.Repo), "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func (s *Server) pullJSON(p *Pull) map[string]any {
	owner := strings.Split(s.Repo, "/")[0]
	repo := s.repoJSON()
	var mergedAt any
	if p.Merged {
		mergedAt = now()
	}
	return map[string]any{
		"id": 1000000 + p.Number, "number": p.Number, "state": p.State, "title": p.Title, "body": p.Body, "draft": p.Draft,
		"user":     user(p.Author),
		"url":      fmt.Sprintf("%s/repos/%s/pulls/%d", s.URL, s.Repo, p.Number),
		"html_url": fmt.Sprintf("https://github.com/%s/pull/%d", s.Repo, p.Number),
		"head":     map[string]any{"label": owner + ":" + p.Head, "ref": p.Head, "sha": s.sha(p.Head), "repo": repo, "user": user(owner)},
		"base":     map[string]any{"label": owner + ":" + p.Base, "ref": p.Base, "sha": s.sha(p.Base), "repo": repo, "user": user(owner)},
		"merged":   p.Merged, "merged_at": mergedAt, "created_at": now(), "updated_at": now(),
	}
}

func user(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{"login": login, "id": len(login) * 7919, "type": typ, "site_admin": false}
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
}

func unprocessable(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": "422"})
}

// authorized checks an installation token ("token X" or "Bearer X").
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "token ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "Bearer ")
	}
	return ok && s.validToken(tok)
}

// mintToken checks the App's JWT (RS256, iss the App's id, at most ten
// minutes long) and mints an installation token.
func (s *Server) mintToken(w http.ResponseWriter, r *http.Request, installation string) {
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !s.validJWT(jwt) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest", "status": "401"})
		return
	}
	if installation != strconv.FormatInt(s.Installation, 10) {
		notFound(w)
		return
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	tok := s.TokenPrefix + hex.EncodeToString(b)
	exp := time.Now().Add(time.Hour)
	s.mu.Lock()
	s.tokens[tok] = exp
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "statuses": "write"},
		"repository_selection": "selected"})
}

func (s *Server) validJWT(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	var head struct{ Alg string }
	var claims struct {
		Iss any
		Iat int64
		Exp int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil || head.Alg != "RS256" {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(s.pub, crypto.SHA256, sum[:], sig) != nil {
		return false
	}
	n := time.Now().Unix()
	return fmt.Sprint(claims.Iss) == strconv.FormatInt(s.AppID, 10) && claims.Exp > n && claims.Iat <= n+60 && claims.Exp-claims.Iat <= 11*60
}

// tokensExpiry is when a token minted now expires.
func (s *Server) tokensExpiry() time.Time { return time.Now().Add(time.Hour) }
