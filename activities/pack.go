package activities

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/telemetry"
)

// packed is a session blob a visit put in the store.
type packed struct {
	digest  string
	size    int64
	deltaOf string // the digest it extends, for an incremental pack
	// manifest is what the blob left the session as (incremental runs).
	manifest *sessionpack.Manifest
}

// pack packs the session into key. An incremental run's pack extends from
// (the node's own slot it resumed) with only what the visit added, when
// from allows it; otherwise it packs the whole session. The reason is why
// it failed ("" when it did not).
func (a *Activities) pack(ctx context.Context, b agent.Backend, env agent.Env, sessionID, key string, incremental bool, from *extension) (packed, string) {
	packer := b.Packer(env)
	if packer == nil {
		return packed{}, fmt.Sprintf("backend %s has no session packer", b.Name())
	}
	var (
		pk   packed
		data []byte
		err  error
	)
	ip, ok := packer.(incrementalPacker)
	switch {
	case incremental && ok:
		var base *sessionpack.Manifest
		if !from.whole() {
			base = from.manifest
		}
		data, pk.manifest, err = ip.PackDelta(ctx, sessionID, base)
		if err == nil && base != nil {
			if h, herr := sessionpack.ReadHeader(data); herr == nil && h.Kind == sessionpack.KindDelta {
				pk.deltaOf = from.last
			}
		}
	default:
		data, err = packer.PackSession(ctx, sessionID)
	}
	if err != nil {
		return packed{}, "pack: " + err.Error()
	}
	if err := blob.PutBytes(ctx, a.Blobs, key, data, blob.CreateOnly()); err != nil {
		return packed{}, "put: " + err.Error()
	}
	a.Metrics.PackBytes(telemetry.WhatSession, int64(len(data)))
	pk.digest, pk.size = digestOf(data), int64(len(data))
	return pk, ""
}
