package runstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Key layout in the blob store (see docs/storage.md):
//
//	runs/<run>/checkpoints/<seq, 20 digits>.json   immutable checkpoint records
//	runs/<run>/sessions/<node>/<ulid>              completed-visit session blobs (slot StateRef)
//	runs/<run>/sessions/<node>/pause/<ulid>        in-flight ask_user session blobs (pause ref)
//	runs/<run>/workspace/<sha256>.pack             workspace packs, named by their content
//	runs/<run>/path/<sha256>                       blocks of the run's path (pathlog.go)
//
// No key is another key plus "/…", so stores that map keys onto
// directories (the filesystem backend, versitygw) can hold them all:
//   - checkpoint names end in ".json" and live beside no directory;
//   - under sessions/<node>/ the entries are 26-character ULIDs (files)
//     and the one name "pause" (a directory); a ULID is never "pause";
//   - node ids are single segments of [A-Za-z0-9_-], so a node called
//     "pause" gives sessions/pause/<ulid>, which nests under nothing.
//
// Every blob of a run lives under runs/<run>/, so DeleteRun is one prefix.
const (
	runsPrefix       = "runs/"
	checkpointsDir   = "checkpoints"
	sessionsDir      = "sessions"
	pauseDir         = "pause"
	workspaceDir     = "workspace"
	packSuffix       = ".pack"
	checkpointSuffix = ".json"
	seqDigits        = 20
	maxRunIDLen      = 200
	maxNodeIDLen     = 128
	sessionIDLen     = 26
)

// ErrInvalidID reports a run, node or session id the key layout cannot
// hold.
var ErrInvalidID = errors.New("runstore: invalid id")

// ValidateRunID accepts 1-200 characters of [A-Za-z0-9._-] that do not
// start with '.'.
func ValidateRunID(run string) error {
	if run == "" || len(run) > maxRunIDLen || run[0] == '.' || !idChars(run, true) {
		return fmt.Errorf("%w: run id %q must be 1-%d characters of [A-Za-z0-9._-], not starting with '.'", ErrInvalidID, run, maxRunIDLen)
	}
	return nil
}

// ValidateNodeID accepts 1-128 characters of [A-Za-z0-9_-].
func ValidateNodeID(node string) error {
	if node == "" || len(node) > maxNodeIDLen || !idChars(node, false) {
		return fmt.Errorf("%w: node id %q must be 1-%d characters of [A-Za-z0-9_-]", ErrInvalidID, node, maxNodeIDLen)
	}
	return nil
}

// validSessionID accepts a ULID's shape: 26 characters of [0-9A-Za-z].
func validSessionID(id string) bool {
	if len(id) != sessionIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func idChars(s string, dot bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		case c == '.' && dot:
		default:
			return false
		}
	}
	return true
}

// RunPrefix is the blob-store prefix holding everything of one run.
func RunPrefix(run string) string { return runsPrefix + run + "/" }

func checkpointsPrefix(run string) string { return RunPrefix(run) + checkpointsDir + "/" }

func checkpointKey(run string, seq int64) string {
	return fmt.Sprintf("%s%0*d%s", checkpointsPrefix(run), seqDigits, seq, checkpointSuffix)
}

// parseCheckpointName returns the sequence number of a checkpoint's file
// name ("00000000000000000042.json").
func parseCheckpointName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, checkpointSuffix)
	if !ok || len(digits) != seqDigits {
		return 0, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil && seq > 0
}

// SessionKey is the blob key of a completed-visit session blob (a
// NodeSessionSlot's StateRef) of node in run. id is a ULID minted in
// workflow code, so a retried Put writes the same key. It returns "" if
// any part is invalid; "" is never a valid blob key, so a Put to it fails
// with blob.ErrInvalidKey instead of writing somewhere unexpected.
func SessionKey(run, node, id string) string {
	if ValidateRunID(run) != nil || ValidateNodeID(node) != nil || !validSessionID(id) {
		return ""
	}
	return RunPrefix(run) + sessionsDir + "/" + node + "/" + id
}

// PauseKey is the blob key of an in-flight ask_user session blob (a
// checkpoint's pause ref) of node in run; "" if any part is invalid.
func PauseKey(run, node, id string) string {
	if ValidateRunID(run) != nil || ValidateNodeID(node) != nil || !validSessionID(id) {
		return ""
	}
	return RunPrefix(run) + sessionsDir + "/" + node + "/" + pauseDir + "/" + id
}

// WorkspacePackKey is the blob key of a workspace pack of run whose bytes
// have the sha256 digest (64 lowercase hex digits); "" if either is
// invalid. The key names the content, so a retried upload writes the same
// bytes to the same key, and a downloaded pack is checked against its key.
func WorkspacePackKey(run, digest string) string {
	if ValidateRunID(run) != nil || !validDigest(digest) {
		return ""
	}
	return RunPrefix(run) + workspaceDir + "/" + digest + packSuffix
}

// WorkspacePackDigest returns the sha256 digest a workspace pack key of run
// names, or an error for any other key.
func WorkspacePackDigest(run, key string) (string, error) {
	rest, ok := strings.CutPrefix(key, RunPrefix(run)+workspaceDir+"/")
	digest, ok2 := strings.CutSuffix(rest, packSuffix)
	if ValidateRunID(run) != nil || !ok || !ok2 || !validDigest(digest) {
		return "", fmt.Errorf("%w: %q is not a workspace pack key of run %q", ErrInvalidID, key, run)
	}
	return digest, nil
}

func validDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RefKind says what a session ref of a run names.
type RefKind int

// Kinds of session refs.
const (
	RefInvalid       RefKind = iota // not a session ref of this run
	RefSession                      // completed-visit blob: SessionKey
	RefPause                        // in-flight ask_user blob: PauseKey
	RefWorkspacePack                // workspace pack: WorkspacePackKey
)

// ParseRef checks that ref is a SessionKey or PauseKey of run and returns
// its kind and node. Activities call it before Get or Delete of a ref read
// from a checkpoint, so a corrupt or foreign ref cannot reach another
// run's blobs.
func ParseRef(run, ref string) (kind RefKind, node string, err error) {
	if _, err := WorkspacePackDigest(run, ref); err == nil {
		return RefWorkspacePack, "", nil
	}
	rest, ok := strings.CutPrefix(ref, RunPrefix(run)+sessionsDir+"/")
	if ValidateRunID(run) != nil || !ok {
		return RefInvalid, "", fmt.Errorf("%w: %q is not a session ref of run %q", ErrInvalidID, ref, run)
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && ValidateNodeID(parts[0]) == nil && validSessionID(parts[1]):
		return RefSession, parts[0], nil
	case len(parts) == 3 && ValidateNodeID(parts[0]) == nil && parts[1] == pauseDir && validSessionID(parts[2]):
		return RefPause, parts[0], nil
	}
	return RefInvalid, "", fmt.Errorf("%w: %q is not a session ref of run %q", ErrInvalidID, ref, run)
}

// AttemptKey is the key that attempt (1, 2, …) of a visit packs into, when
// the Temporal server itself retries the visit after its worker was lost:
// the first attempt uses key as the workflow minted it; each later one a
// key of the same node whose id keeps the ULID's time and replaces its
// random part with one derived from key and attempt. A lost attempt that
// is still running somewhere therefore never writes over the blob its
// successor's result names. A key that is not a session or pause key is
// returned unchanged.
func AttemptKey(key string, attempt int32) string {
	dir, id, ok := cutLast(key)
	if attempt <= 1 || !ok || !validSessionID(id) || !strings.Contains(dir, "/"+sessionsDir+"/") {
		return key
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00attempt %d", key, attempt))
	b := []byte(id[:10])
	for i := 0; len(b) < sessionIDLen; i++ {
		b = append(b, crockford[h[i]&31])
	}
	return dir + "/" + string(b)
}

// crockford is the alphabet of a ULID.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func cutLast(key string) (dir, name string, ok bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}
