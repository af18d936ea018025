package workflows

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// chainSlot is a slot whose base is base and whose parts are base/1 …
// base/n.
func chainSlot(base string, n int) runstore.NodeSessionSlot {
	s := runstore.NodeSessionSlot{StateRef: base, Digest: "d-" + base}
	for i := 1; i <= n; i++ {
		s.Parts = append(s.Parts, runstore.SessionPart{Ref: fmt.Sprintf("%s/%d", base, i), Digest: fmt.Sprintf("d-%s/%d", base, i)})
	}
	return s
}

// Without parts, the window keeps the last SessionHistory slots and drops
// the oldest, one blob each: what it did before slots had parts, which
// replaying older runs relies on.
func TestRetainWithoutPartsKeepsTheLastSlots(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{}, opts: runapi.Options{SessionHistory: 3}}
	var dropped []string
	for i := range 5 {
		dropped = append(dropped, r.retain("w", chainSlot(fmt.Sprintf("s%d", i), 0))...)
	}
	assert.Equal(t, []string{"s0", "s1"}, dropped)
	assert.Equal(t, []string{"s2", "s3", "s4"}, r.cp.RetainedSessions["w"])
	assert.Nil(t, r.cp.RetainedParts)

	r = &runImpl{cp: &runstore.Checkpoint{}, opts: runapi.Options{SessionHistory: -1}}
	assert.Equal(t, []string{"s0", "s0/1"}, r.retain("w", chainSlot("s0", 1)), "no history: the superseded slot goes at once, parts and all")
	assert.Empty(t, r.cp.RetainedSessions["w"])
}

// With parts, a slot is kept and dropped whole, the window counts blobs,
// and the newest superseded slot stays even when it alone is over.
func TestRetainKeepsAndDropsSlotsWithTheirParts(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{}, opts: runapi.Options{SessionHistory: 4}}
	assert.Empty(t, r.retain("w", chainSlot("a", 2))) // 3 blobs
	assert.Equal(t, map[string][]string{"a": {"a/1", "a/2"}}, r.cp.RetainedParts["w"])

	drop := r.retain("w", chainSlot("b", 0)) // 4 blobs in all: kept
	assert.Empty(t, drop)
	drop = r.retain("w", chainSlot("c", 1)) // 6: a goes, with its parts
	assert.Equal(t, []string{"a", "a/1", "a/2"}, drop)
	assert.Equal(t, []string{"b", "c"}, r.cp.RetainedSessions["w"])
	assert.Equal(t, map[string][]string{"c": {"c/1"}}, r.cp.RetainedParts["w"])

	drop = r.retain("w", chainSlot("d", 9)) // 10 blobs alone: b and c go, d stays
	assert.Equal(t, []string{"b", "c", "c/1"}, drop)
	assert.Equal(t, []string{"d"}, r.cp.RetainedSessions["w"])
	require.Len(t, r.cp.RetainedParts["w"]["d"], 9)

	// Every blob a checkpoint keeps is one Refs lists, so rewinds and
	// `tether delete` see them.
	r.cp.NodeSessions = map[string]runstore.NodeSessionSlot{"w": chainSlot("e", 2)}
	refs := r.cp.Refs()
	assert.Subset(t, refs, []string{"d", "d/1", "d/9", "e", "e/1", "e/2"})

	drop = r.retain("w", chainSlot("e", 0))
	assert.Equal(t, []string{"d", "d/1", "d/2", "d/3", "d/4", "d/5", "d/6", "d/7", "d/8", "d/9"}, drop)
	assert.Nil(t, r.cp.RetainedParts, "no node keeps parts: the field goes")
}
