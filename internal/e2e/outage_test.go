package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/testenv"
)

// TestRunRidesOutAStoreOutage: the S3 server is down for 4 seconds just as
// a run needs it (the checkpoint after an answer, then a visit that
// restores and snapshots its workspace and session). The store retries
// transient failures for up to two minutes, so the run goes on as if
// nothing happened, with no fail-stop. Then, with the store down, `tether
// status` still answers from Temporal and says what is missing and why.
func TestRunRidesOutAStoreOutage(t *testing.T) {
	s3 := testenv.VersityGW(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	url := s3.URL("outage")
	h := newHarness(t, url)
	h.startWorker()
	g := testGraph(t, "ws-loop")
	id := "outage"
	run := h.start(id, g, nil)
	h.answer(id, h.waitQuestion(id).ID, "revise")

	// The store goes down as the second answer comes in.
	q := h.waitQuestion(id)
	s3.Stop()
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(4 * time.Second)
		restarted <- s3.Restart()
	}()
	start := time.Now()
	h.answer(id, q.ID, "revise")
	require.NoError(t, <-restarted)
	// The next question comes once the checkpoint, the writer's visit and
	// the tool's visit all got through.
	q = h.waitQuestion(id)
	rodeOut := time.Since(start)
	h.answer(id, q.ID, "approve")

	res, err := h.result(run)
	require.NoError(t, err, "no fail-stop: the run rode out the outage")
	assert.Equal(t, "completed", res.Status)
	st := h.state(id)
	assert.Contains(t, fmt.Sprint(st.Outputs["check"]["stdout"]), "draft 3")
	t.Logf("a 4 s store outage cost the run %s", rodeOut.Round(100*time.Millisecond))

	// tether status with the store down: Temporal still knows the run.
	s3.Stop()
	h.useCLI(t)
	t.Setenv("TETHER_STORE_RETRY", "1s")
	code, out := tetherCode(t, "status", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "status:     completed")
	assert.Contains(t, out, "Temporal only")
	assert.Contains(t, out, "the run store "+url+" failed")
	assert.Contains(t, out, "connection refused")
	assert.NotContains(t, out, "operation error", "the store's failure is said in one line, not the SDK's envelope")
	// A run neither source knows: both failures are named.
	code, out = tetherCode(t, "status", "no-such-run")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "Temporal does not know the run")
	assert.Contains(t, out, "connection refused")
}
