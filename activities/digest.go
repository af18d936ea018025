package activities

import (
	"fmt"
	"path"
	"time"

	"github.com/oklog/ulid/v2"

	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
)

// digestsSince is when every path of Tether records a digest with every
// session blob it packs, the slot's and the pause's. One-trip visits have
// since their first build (2026-12-01 03:33 UTC); the two-activity visits
// of runs recorded before them (workflows/legacy_visit.go) only since the build
// released on this date. A ref's ULID carries the workflow's clock at the
// moment the ref was minted, right before the visit that packed it, so a
// ref minted at or after this time must come with its digest. A slot an
// older build wrote after it is refused, and its node starts a fresh
// conversation: a lost conversation, never a swapped one.
var digestsSince = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// checkSessionBlob says why the blob read from ref for run may not be
// unpacked ("" when it may): the ref is not a session ref of this run, the
// blob differs from the digest recorded when it was packed, or no digest
// was recorded although the ref was minted after digests existed (a
// checkpoint that lost its digest must not let a swapped archive through).
// A slot minted before digests existed has none, and only it is accepted
// without one.
func checkSessionBlob(run, ref, digest string, data []byte) string {
	if _, _, err := runstore.ParseRef(run, ref); err != nil {
		// The note goes on the output: it names what happened, not the
		// ref (ADR-089).
		return "the session's ref is not one of this run's session refs; it is not read"
	}
	if digest == "" {
		if !mintedBefore(ref, digestsSince) {
			return "the checkpoint records no digest for the session's blob, though it was packed after digests were recorded; it is not unpacked"
		}
		return ""
	}
	if err := sessionpack.VerifyDigest(data, digest); err != nil {
		return fmt.Sprintf("the session's blob is not the one the checkpoint recorded: %v", err)
	}
	return ""
}

// mintedBefore reports whether the ULID that ends ref was minted before t.
func mintedBefore(ref string, t time.Time) bool {
	id, err := ulid.ParseStrict(path.Base(ref))
	if err != nil {
		return false
	}
	return ulid.Time(id.Time()).Before(t)
}
