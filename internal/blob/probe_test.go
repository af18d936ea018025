package blob

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type refusingPuts struct{ Store }

func (refusingPuts) Put(context.Context, string, io.Reader, int64, ...PutOption) error {
	return errors.New("get credentials: no EC2 IMDS role found")
}

// A probe leaves nothing behind, and says which step failed and why.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	mem := NewMem()
	require.NoError(t, Probe(ctx, mem, ProbePrefix("w1")))
	left, err := mem.List(ctx, "workers/")
	require.NoError(t, err)
	assert.Empty(t, left)

	err = Probe(ctx, refusingPuts{mem}, ProbePrefix("host/with:odd chars"))
	require.Error(t, err)
	assert.Equal(t, "write failed: get credentials: no EC2 IMDS role found", err.Error())
}
