package jsonl_test

import (
	"testing"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

func BenchmarkAppend(b *testing.B) {
	contracttest.BenchAppend(b, func(b *testing.B) sessionlog.Storage { return jsonl.NewStore(b.TempDir()) })
}

func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	contracttest.BenchLoad(b, func(*testing.B) sessionlog.Storage { return jsonl.NewStore(root) })
}
