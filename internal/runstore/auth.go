package runstore

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeyEnv names the variable that holds the checkpoint key (read by
// internal/config, never here): 32 bytes as 64 hex digits or base64.
const KeyEnv = "TETHER_CHECKPOINT_KEY"

// KeySize is the length of a checkpoint key.
const KeySize = 32

// macMagic starts every authenticated checkpoint: the magic, one space,
// the HMAC-SHA256 in 64 lowercase hex digits, a newline, then the stored
// body (a gzip member of the JSON, or JSON from before compression)
// exactly as it was authenticated. An unsigned checkpoint starts with the
// gzip magic or '{', so the two never look alike.
const macMagic = "TCK1 "

// macDomain separates checkpoint MACs from any other use of the key.
const macDomain = "tether checkpoint v1\x00"

// headerLen is the length of the line before the body.
const headerLen = len(macMagic) + 2*sha256.Size + 1

var (
	// ErrCheckpointAuth reports a checkpoint whose MAC does not verify: it
	// was changed, moved to another run or sequence number, or written
	// under another key. It is never a not-found.
	ErrCheckpointAuth = errors.New("runstore: checkpoint failed authentication")
	// ErrUnsignedCheckpoint reports a checkpoint without a MAC read by a
	// store that has a key: one written before checkpoints were signed, or
	// by a writer without the key. It wraps ErrCheckpointAuth; `tether
	// store sign` re-signs a run's checkpoints once an operator vouches
	// for them.
	ErrUnsignedCheckpoint = fmt.Errorf("%w: the checkpoint carries no MAC", ErrCheckpointAuth)
)

// checkpointMAC is HMAC-SHA256 under key of the domain, the run id, the
// sequence number and the body, so a valid record cannot be replayed
// under another run or number. Run ids never hold a NUL, which ends the
// id unambiguously.
func checkpointMAC(key []byte, run string, seq int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macDomain))
	m.Write([]byte(run))
	m.Write([]byte{0})
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(seq))
	m.Write(n[:])
	m.Write(body)
	return m.Sum(nil)
}

// Seal returns body authenticated for checkpoint seq of run.
func Seal(key []byte, run string, seq int64, body []byte) []byte {
	out := make([]byte, 0, headerLen+len(body))
	out = append(out, macMagic...)
	out = hex.AppendEncode(out, checkpointMAC(key, run, seq, body))
	out = append(out, '\n')
	return append(out, body...)
}

// Signed reports whether data carries a MAC header (verified or not).
func Signed(data []byte) bool { return bytes.HasPrefix(data, []byte(macMagic)) }

// Unseal returns the stored body of data read as checkpoint seq of run,
// for Decompress. With a key, data must carry a MAC that verifies
// (ErrUnsignedCheckpoint, ErrCheckpointAuth otherwise). Without a key the
// store is trusted: a MAC header is removed unchecked and an unsigned
// body is returned as it is.
func Unseal(key []byte, run string, seq int64, data []byte) ([]byte, error) {
	if !Signed(data) {
		if key != nil {
			return nil, ErrUnsignedCheckpoint
		}
		return data, nil
	}
	if len(data) < headerLen || data[headerLen-1] != '\n' {
		return nil, fmt.Errorf("%w: malformed MAC header", ErrCheckpointAuth)
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, data[len(macMagic):headerLen-1]); err != nil {
		return nil, fmt.Errorf("%w: malformed MAC header", ErrCheckpointAuth)
	}
	body := data[headerLen:]
	if key == nil {
		return body, nil
	}
	if !hmac.Equal(got, checkpointMAC(key, run, seq, body)) {
		return nil, fmt.Errorf("%w: the MAC does not match (the record was changed, copied from another run or sequence number, or signed with another key)", ErrCheckpointAuth)
	}
	return body, nil
}

// ValidKey checks a checkpoint key's length.
func ValidKey(key []byte) error {
	if key != nil && len(key) != KeySize {
		return fmt.Errorf("runstore: a checkpoint key is %d bytes, not %d", KeySize, len(key))
	}
	return nil
}
