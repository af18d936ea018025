package blob_test

import (
	"testing"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blob/storetest"
)

func TestMemConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			New:      func(t *testing.T) blob.Store { return blob.NewMem() },
			InMemory: true,
		}
	})
}
