package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
)

func openBench(b *testing.B, path string) sessionlog.Storage {
	s, err := NewStore(path)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkAppend(b *testing.B) {
	contracttest.BenchAppend(b, func(b *testing.B) sessionlog.Storage {
		return openBench(b, filepath.Join(b.TempDir(), "s.db"))
	})
}

func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.db")
	contracttest.BenchLoad(b, func(b *testing.B) sessionlog.Storage { return openBench(b, path) })
}
