package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
)

// fakeAgent is an in-process agent for workflow unit tests. It keeps each
// conversation "on disk" per state root, so a test can wipe a root, or run
// a visit on another root, and see exactly what a real CLI would: a resume
// of an id that is not in the live root fails with ErrNoSession.
//
// A prompt containing "ASK:" asks the user (once per turn, until answered);
// "FAIL" fails; "JSON:{...}" returns that object as structured output;
// "CALLS:n" makes the visit n model calls of 100 tokens and a cent each,
// which stop, as the worker's model relay stops them, once a budget of
// the request's limits is spent.
type fakeAgent struct {
	name string

	mu    sync.Mutex
	disks map[string]map[string][]string // root → session → user turns
	next  int
	calls []agent.Request
	// packErr, when set, makes PackSession fail.
	packErr error
	// persist is false for a backend without the capability.
	persist bool
	// onExecute, when set, runs inside every Execute, under the lock: it
	// may touch disks directly but must not call wipe.
	onExecute func(req agent.Request)
	// wipeAfter names a node after whose visit every live root is wiped,
	// as if that pod were recycled.
	wipeAfter string
	// defaultModel is the worker's default model, for nodes that name none.
	defaultModel string
	// wipeAfterPack wipes every live root once a session was packed, as
	// if the next visit landed on a new pod.
	wipeAfterPack bool
	// fail, when set, is asked before each visit (call counts from 1) and
	// the visit fails with what it returns.
	fail func(call int, req agent.Request) error
}

func newFakeAgent(name string) *fakeAgent {
	return &fakeAgent{name: name, disks: map[string]map[string][]string{}, persist: catalogue.HasPersist(name)}
}

func (f *fakeAgent) Name() string { return f.name }

// Fingerprint depends on the model (the node's, else the worker's
// default) and the node's settings, like a real backend's, so a test can
// tell one node's conversation from another's.
func (f *fakeAgent) Fingerprint(req agent.Request) string {
	fp := "fp-" + f.name
	model := req.Model
	if model == "" {
		model = f.defaultModel
	}
	if model != "" {
		fp += "/" + model
	}
	if st := req.Settings; st.Permissions != "" || st.SystemPrompt != "" || st.AppendSystemPrompt != "" || len(st.Tools)+len(st.DisallowedTools) > 0 {
		fp += fmt.Sprintf("/%s/%q/%q/%v/%v", st.Permissions, st.SystemPrompt, st.AppendSystemPrompt, st.Tools, st.DisallowedTools)
	}
	return fp
}

func (f *fakeAgent) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wipeAfter != "" && req.NodeID == f.wipeAfter {
		defer f.wipeLocked()
	}
	f.calls = append(f.calls, req)
	if f.fail != nil {
		if err := f.fail(len(f.calls), req); err != nil {
			return agent.Result{}, err
		}
	}
	disk := f.disks[req.Env.StateRoot]
	if disk == nil {
		disk = map[string][]string{}
		f.disks[req.Env.StateRoot] = disk
	}
	id := req.SessionID
	if id != "" {
		if _, ok := disk[id]; !ok {
			return agent.Result{}, fmt.Errorf("%w: %s", agent.ErrNoSession, id)
		}
		if req.Fork {
			f.next++
			nid := fmt.Sprintf("%s-s%d", f.name, f.next)
			disk[nid] = append([]string(nil), disk[id]...)
			id = nid
		}
	} else {
		f.next++
		id = fmt.Sprintf("%s-s%d", f.name, f.next)
		disk[id] = nil
	}
	turn := req.Prompt
	if req.Answer != nil {
		turn = "ANSWER:" + req.Answer.Text
	}
	disk[id] = append(disk[id], turn)
	// Every model call costs 100 tokens and a cent; a visit makes one.
	res := agent.Result{SessionID: id, Fingerprint: f.Fingerprint(req)}
	calls := 1
	if i := strings.Index(req.Prompt, "CALLS:"); i >= 0 {
		_, _ = fmt.Sscanf(req.Prompt[i+len("CALLS:"):], "%d", &calls)
	}
	for range calls {
		if res.BudgetStop = agent.Spent(req.Limits, res.Usage); res.BudgetStop != "" {
			res.Metered = res.Usage
			res.Text = fmt.Sprintf("stopped in turn %d of %s", len(disk[id]), id)
			return res, nil
		}
		res.Usage = res.Usage.Add(agent.Usage{InputTokens: 90, OutputTokens: 10, CostUSD: 0.01, CostKnown: true})
	}
	if strings.Contains(req.Prompt, "FAIL") {
		return agent.Result{}, fmt.Errorf("%w: asked to fail", agent.ErrScript)
	}
	if f.onExecute != nil {
		f.onExecute(req)
	}
	// Ask once per "ASK:" in the prompt, until that many answers are in
	// the conversation.
	answered := strings.Count(req.Prompt, activities.LostAnswerIntro)
	for _, t := range disk[id] {
		if strings.HasPrefix(t, "ANSWER:") {
			answered++
		}
	}
	if answered < strings.Count(req.Prompt, "ASK:") {
		res.NeedsInteraction = &agent.Interaction{
			Questions:        []agent.Question{{ID: "q1", Text: fmt.Sprintf("question %d", answered+1)}},
			PendingToolUseID: fmt.Sprintf("tool-%d", answered+1),
		}
		res.Text = "asking"
		return res, nil
	}
	res.Text = fmt.Sprintf("turn %d of %s: %s", len(disk[id]), id, strings.Join(disk[id], " | "))
	if i := strings.Index(req.Prompt, "JSON:"); i >= 0 {
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(req.Prompt[i+5:])), &m); err != nil {
			return agent.Result{}, err
		}
		res.Structured = m
	}
	return res, nil
}

func (f *fakeAgent) Packer(env agent.Env) agent.SessionPacker {
	if !f.persist {
		return nil
	}
	return &fakePacker{f: f, root: env.StateRoot}
}

// wipe empties every live root, as a new worker pod would have them.
func (f *fakeAgent) wipe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wipeLocked()
}

func (f *fakeAgent) wipeLocked() { f.disks = map[string]map[string][]string{} }

func (f *fakeAgent) requests() []agent.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]agent.Request(nil), f.calls...)
}

type fakePacker struct {
	f    *fakeAgent
	root string
}

type fakeArchive struct {
	Backend   string   `json:"backend"`
	SessionID string   `json:"session_id"`
	Turns     []string `json:"turns"`
}

func (p *fakePacker) PackSession(_ context.Context, id string) ([]byte, error) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.f.packErr != nil {
		return nil, p.f.packErr
	}
	turns, ok := p.f.disks[p.root][id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", agent.ErrNoSession, id)
	}
	if p.f.wipeAfterPack {
		defer p.f.wipeLocked()
	}
	return json.Marshal(fakeArchive{Backend: p.f.name, SessionID: id, Turns: turns})
}

func (p *fakePacker) UnpackSession(_ context.Context, id string, blob []byte) error {
	var a fakeArchive
	if err := json.Unmarshal(blob, &a); err != nil {
		return fmt.Errorf("corrupt archive: %w", err)
	}
	if a.Backend != p.f.name || a.SessionID != id {
		return errors.New("archive header does not match")
	}
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.f.disks[p.root] == nil {
		p.f.disks[p.root] = map[string][]string{}
	}
	p.f.disks[p.root][id] = a.Turns
	return nil
}

func (p *fakePacker) HasSession(_ context.Context, id string) bool {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	_, ok := p.f.disks[p.root][id]
	return ok
}
