package cliexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether-run/tether/internal/agent"
)

// ErrNoPacker is returned by UnavailablePacker.
var ErrNoPacker = errors.New("session packer not available in this build")

// UnavailablePacker stands in for a backend's packer while none is wired:
// it packs and unpacks nothing and reports every session absent.
type UnavailablePacker struct{ Backend string }

var _ agent.SessionPacker = UnavailablePacker{}

// PackSession fails with ErrNoPacker.
func (p UnavailablePacker) PackSession(context.Context, string) ([]byte, error) {
	return nil, fmt.Errorf("%s: %w", p.Backend, ErrNoPacker)
}

// UnpackSession fails with ErrNoPacker.
func (p UnavailablePacker) UnpackSession(context.Context, string, []byte) error {
	return fmt.Errorf("%s: %w", p.Backend, ErrNoPacker)
}

// HasSession reports false.
func (p UnavailablePacker) HasSession(context.Context, string) bool { return false }
