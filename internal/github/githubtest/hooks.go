package githubtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
)

// Delivery is a webhook delivery as GitHub sends it.
type Delivery struct {
	ID, Event string
	Payload   []byte
}

// Sent is a delivery's answer.
type Sent struct {
	Status int
	Body   string
}

// Deliver POSTs d to url signed with secret as GitHub signs deliveries
// (X-Hub-Signature-256: sha256=HMAC-SHA256 of the body).
func Deliver(t testing.TB, url, secret string, d Delivery) Sent {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.Payload)
	return DeliverSigned(t, url, "sha256="+hex.EncodeToString(m.Sum(nil)), d)
}

// DeliverSigned POSTs d with the signature given (a forged one).
func DeliverSigned(t testing.TB, url, signature string, d Delivery) Sent {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.Payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", "292430182")
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-Hub-Signature-256", signature)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("deliver %s: %v", d.Event, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Sent{Status: resp.StatusCode, Body: string(b)}
}

// NewDeliveryID is a delivery id as GitHub makes them (a GUID).
func NewDeliveryID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (s *Server) envelope(action string, sender string, v map[string]any) []byte {
	v["action"] = action
	v["repository"] = s.repoJSON()
	v["sender"] = user(sender)
	v["installation"] = map[string]any{"id": s.Installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uOTAyMTA="}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *Server) issueJSON(i *issue) map[string]any {
	labels := []any{}
	for _, l := range i.Labels {
		labels = append(labels, map[string]any{"name": l, "color": "f29513"})
	}
	v := map[string]any{"id": 1000000 + i.Number, "number": i.Number, "title": i.Title, "body": i.Body, "state": "open",
		"user": user(i.Author), "labels": labels, "author_association": "OWNER",
		"html_url": fmt.Sprintf("https://github.com/%s/issues/%d", s.Repo, i.Number),
		"url":      fmt.Sprintf("%s/repos/%s/issues/%d", s.URL, s.Repo, i.Number)}
	if i.IsPull {
		v["pull_request"] = map[string]any{"url": fmt.Sprintf("%s/repos/%s/pulls/%d", s.URL, s.Repo, i.Number),
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d", s.Repo, i.Number)}
		v["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d", s.Repo, i.Number)
	}
	return v
}

// Labeled is the issues.labeled delivery of label added to issue n.
func (s *Server) Labeled(n int, label, by string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.issues[n]
	i.Labels = append(i.Labels, label)
	return Delivery{ID: NewDeliveryID(), Event: "issues", Payload: s.envelope("labeled", by, map[string]any{
		"issue": s.issueJSON(i), "label": map[string]any{"id": 208045946, "name": label, "color": "f29513"}})}
}

// Commented is the issue_comment.created delivery of a comment on issue
// (or pull request) n, by author whose association with the repository
// is association (OWNER, COLLABORATOR, NONE, …).
func (s *Server) Commented(n int, author, association, body string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Comment{ID: s.id(), Number: n, Body: body, Author: author}
	s.comments = append(s.comments, c)
	cj := s.commentJSON(c)
	cj["author_association"] = association
	return Delivery{ID: NewDeliveryID(), Event: "issue_comment", Payload: s.envelope("created", author, map[string]any{
		"issue": s.issueJSON(s.issues[n]), "comment": cj})}
}

// Reviewed is the pull_request_review.submitted delivery of a review of
// pull request n in state (approved, changes_requested, commented), with
// comments on lines.
func (s *Server) Reviewed(n int, author, association, state, body string, comments ...ReviewComment) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pulls[n]
	id := s.id()
	p.ReviewComments[id] = comments
	p.reviewAssociation = association
	pj := s.pullJSON(p)
	return Delivery{ID: NewDeliveryID(), Event: "pull_request_review", Payload: s.envelope("submitted", author, map[string]any{
		"review": map[string]any{"id": id, "node_id": fmt.Sprintf("PRR_%d", id), "user": user(author), "body": body,
			"state": state, "author_association": association, "commit_id": pj["head"].(map[string]any)["sha"],
			"html_url":     fmt.Sprintf("https://github.com/%s/pull/%d#pullrequestreview-%d", s.Repo, n, id),
			"submitted_at": now()},
		"pull_request": pj})}
}

// Closed is the pull_request.closed delivery of pull request n, merged or
// not.
func (s *Server) Closed(n int, merged bool, by string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pulls[n]
	p.State, p.Merged = "closed", merged
	return Delivery{ID: NewDeliveryID(), Event: "pull_request", Payload: s.envelope("closed", by, map[string]any{
		"number": n, "pull_request": s.pullJSON(p)})}
}

// PullOf is the pull request whose head is branch.
func (s *Server) PullOf(branch string) (Pull, bool) {
	for _, p := range s.Pulls() {
		if p.Head == branch {
			return p, true
		}
	}
	return Pull{}, false
}

// Refused are the requests no endpoint of the API took (404, as GitHub
// answers a path it does not have): what Tether must never ask.
func (s *Server) Refused() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Unknown {
			out = append(out, r)
		}
	}
	return out
}

// OpenPull opens a pull request of a person's from head (a branch of the
// repository, made with GitServer.Branch) into base.
func (s *Server) OpenPull(head, base, title, author string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.number++
	n := s.number
	s.pulls[n] = &Pull{Number: n, Title: title, Head: head, Base: base, State: "open", Author: author, ReviewComments: map[int64][]ReviewComment{}}
	s.issues[n] = &issue{Number: n, Title: title, Author: author, IsPull: true}
	return n
}

// DeleteComment deletes comment id, as a person may.
func (s *Server) DeleteComment(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comments = slices.DeleteFunc(s.comments, func(c *Comment) bool { return c.ID == id })
}
