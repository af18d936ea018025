package packer

import (
	"bytes"
	"runtime/debug"
	"sync"

	"github.com/tether-run/tether/internal/packer/archive"
)

// The archive format, its header and its digests are the read side's,
// internal/packer/archive: a program that only reads sessions links that
// package alone. The packer writes and unpacks that format.

// FormatVersion is the archive format this build writes and reads.
const FormatVersion = archive.FormatVersion

// Header describes an archive (archive.Header).
type Header = archive.Header

// KindDelta is the Kind of an archive that holds what changed since the
// one before it.
const KindDelta = archive.KindDelta

// Digest returns the archive's content digest, "sha256:<hex>", for the
// runtime to record beside the blob ref and compare after a Get.
func Digest(blob []byte) string { return archive.Digest(blob) }

// VerifyDigest checks blob against the digest recorded when it was packed
// and fails with ErrDigestMismatch when they differ (archive.VerifyDigest).
func VerifyDigest(blob []byte, want string) error { return archive.VerifyDigest(blob, want) }

// ReadHeader returns an archive's header without decompressing it. It fails
// with ErrCorrupt on a blob that is not an archive, ErrFormatVersion on an
// archive of another format version.
func ReadHeader(blob []byte) (Header, error) { return archive.ReadHeader(blob) }

func appendPrefix(buf *bytes.Buffer, h Header) error { return archive.AppendPrefix(buf, h) }

var createdBy = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "tether " + bi.Main.Version
	}
	return "tether"
})
