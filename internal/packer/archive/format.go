package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Archive layout (all integers big-endian):
//
//	magic   8 bytes  "TETHRPAK"
//	version 2 bytes  FormatVersion
//	hlen    4 bytes  length of the header JSON (at most 64 KiB)
//	header  hlen     Header as JSON
//	payload          one zstd frame holding a tar stream
//
// The header sits outside the compressed payload so that a foreign or
// mismatched archive is refused before a byte is decompressed.
const (
	magic = "TETHRPAK"
	// PrefixBytes is the size of the fixed part before the header.
	PrefixBytes = len(magic) + 2 + 4
	// MaxHeaderBytes caps the header JSON.
	MaxHeaderBytes = 64 << 10
)

// FormatVersion is the archive format this build writes and reads.
const FormatVersion = 1

// Header describes an archive. It is written in clear before the compressed
// tar stream.
type Header struct {
	// Backend is the backend name (claude_code, codex, ...).
	Backend string `json:"backend"`
	// SessionID is the CLI's session id.
	SessionID string `json:"session_id"`
	// SourceWorkdir is the working directory the session ran in when packed,
	// as the CLI saw it (absolute, symlinks resolved). Informational: unpack
	// places files for the target env's working directory.
	SourceWorkdir string `json:"source_workdir"`
	// CreatedBy names the program that wrote the archive.
	CreatedBy string `json:"created_by"`
	// Kind is empty for an archive of the whole session, KindDelta for one
	// that holds only what changed since the archive before it; a delta is
	// applied only after its base.
	Kind string `json:"kind,omitempty"`
}

// KindDelta is the Kind of an archive that holds what changed since the
// one before it.
const KindDelta = "delta"

// PAX records of a delta's file entries. Every file entry of a delta names
// the sha256 of the whole file it leaves behind; an entry that appends
// also names the size and sha256 of the prefix it follows.
const (
	PAXOffset = "TETHER.offset"
	PAXPrefix = "TETHER.prefix_sha256"
	PAXSum    = "TETHER.sha256"
)

// Digest returns the archive's content digest, "sha256:<hex>", for the
// runtime to record beside the blob ref and compare after a Get.
func Digest(blob []byte) string {
	sum := sha256.Sum256(blob)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// VerifyDigest checks blob against the digest recorded when it was packed
// (Digest's "sha256:<hex>"), and fails with ErrDigestMismatch when they
// differ or the recorded digest is not one: a blob replaced or damaged in
// the store is then refused before it is read.
func VerifyDigest(blob []byte, want string) error {
	hexPart, ok := strings.CutPrefix(want, "sha256:")
	if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 2*sha256.Size {
		return fmt.Errorf("%w: the recorded digest %q is not sha256:<64 hex digits>", ErrDigestMismatch, want)
	}
	if got := Digest(blob); !strings.EqualFold(got, want) {
		return fmt.Errorf("%w: the blob's digest is %s but %s was recorded when it was packed; it was replaced or damaged in the store, and is not unpacked", ErrDigestMismatch, got, want)
	}
	return nil
}

// ReadHeader returns an archive's header without decompressing it. It fails
// with ErrCorrupt on a blob that is not an archive, ErrFormatVersion on an
// archive of another format version.
func ReadHeader(blob []byte) (Header, error) {
	h, _, err := Split(blob)
	return h, err
}

// AppendPrefix writes the part of an archive before its payload: magic,
// version and h.
func AppendPrefix(buf *bytes.Buffer, h Header) error {
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("archive: encode header: %w", err)
	}
	if len(js) > MaxHeaderBytes {
		return fmt.Errorf("%w: header of %d bytes (working directory path too long?)", ErrTooLarge, len(js))
	}
	buf.WriteString(magic)
	var n [6]byte
	binary.BigEndian.PutUint16(n[:2], FormatVersion)
	binary.BigEndian.PutUint32(n[2:], uint32(len(js)))
	buf.Write(n[:])
	buf.Write(js)
	return nil
}

// Split checks an archive's prefix and returns its header and its
// compressed payload.
func Split(blob []byte) (Header, []byte, error) {
	if len(blob) < PrefixBytes || string(blob[:len(magic)]) != magic {
		return Header{}, nil, fmt.Errorf("%w: bad magic: the blob is not a session archive", ErrCorrupt)
	}
	rest := blob[len(magic):]
	if v := binary.BigEndian.Uint16(rest[:2]); v != FormatVersion {
		return Header{}, nil, fmt.Errorf("%w: archive is format %d, this build reads format %d; unpack it with a matching worker", ErrFormatVersion, v, FormatVersion)
	}
	hlen := binary.BigEndian.Uint32(rest[2:6])
	rest = rest[6:]
	if hlen > MaxHeaderBytes || int64(hlen) > int64(len(rest)) {
		return Header{}, nil, fmt.Errorf("%w: header length %d out of range", ErrCorrupt, hlen)
	}
	var h Header
	dec := json.NewDecoder(bytes.NewReader(rest[:hlen]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return Header{}, nil, fmt.Errorf("%w: header: trailing data", ErrCorrupt)
	}
	return h, rest[hlen:], nil
}
