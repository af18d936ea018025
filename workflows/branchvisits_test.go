package workflows

import (
	"time"
)

// branchLoop fans out to two branches that each loop on their node while
// `visits < 3`: each node must be visited exactly three times.
var branchLoop = graphYAML("branch-loop")

// A branch's loop visits its node exactly as often as its when allows,
// however long the saves of the other branch's progress take: a branch
// never counts its visits on the copy a save in flight sent to the store.
func (s *GraphRunSuite) TestBranchLoopsCountTheirVisitsWithASlowStore() {
	s.store.mu.Lock()
	s.store.slowPut, s.store.slow = "/checkpoints/", 300*time.Millisecond
	s.store.mu.Unlock()
	_, err := s.run(branchLoop, nil)
	s.Require().NoError(err)
	per := map[string]int{}
	for _, r := range s.agents["scripted"].requests() {
		per[r.NodeID]++
	}
	s.Equal(3, per["left"], "left's loop")
	s.Equal(3, per["right"], "right's loop")
	cp := s.latest()
	s.Equal(3, cp.Visits["left"])
	s.Equal(3, cp.Visits["right"])
}
