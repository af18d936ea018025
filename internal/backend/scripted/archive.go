package scripted

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// The archive a scripted session travels in, until the shared packer format
// replaces it: an uncompressed tar whose first entry, manifest.json, names
// the backend, the session id and every file with its size and SHA-256;
// the files follow in manifest order. Writing is deterministic (fixed mode,
// owner and time, sorted by the caller), so the same session packs to the
// same bytes. Reading trusts nothing: see decodeArchive.

const (
	archiveFormat = "tether-scripted-session/v1"
	manifestName  = "manifest.json"
	maxManifest   = 64 << 10
	maxFiles      = 16
	// maxFileSize bounds one session file (a log of 1 GiB is far beyond
	// any real conversation).
	maxFileSize = 1 << 30
)

type manifest struct {
	Format    string         `json:"format"`
	Backend   string         `json:"backend"`
	SessionID string         `json:"session_id"`
	Files     []manifestFile `json:"files"`
}

type manifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

type archiveFile struct {
	Path string
	Data []byte
}

func encodeArchive(backendName, sessionID string, files []archiveFile) ([]byte, error) {
	m := manifest{Format: archiveFormat, Backend: backendName, SessionID: sessionID}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		m.Files = append(m.Files, manifestFile{Path: f.Path, Size: int64(len(f.Data)), SHA256: hex.EncodeToString(sum[:])})
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	put := func(name string, data []byte) error {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name,
			Mode:     0o600,
			Size:     int64(len(data)),
			ModTime:  time.Unix(0, 0),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(manifestName, mb); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := put(f.Path, f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// safeRel refuses any archive path that could land outside the directory
// it is extracted into: absolute, "..", ".", backslashes, empty elements.
func safeRel(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("unsafe path %q", p)
	}
	if path.Clean(p) != p {
		return fmt.Errorf("unsafe path %q (not clean)", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("unsafe path %q", p)
		}
	}
	return nil
}

// decodeArchive reads an archive, refusing anything but regular files whose
// names, order, sizes and digests match the manifest, and any truncation.
// It does not decide which paths are allowed; the caller whitelists them.
func decodeArchive(blob []byte) (*manifest, []archiveFile, error) {
	tr := tar.NewReader(bytes.NewReader(blob))
	next := func(want string, limit int64) ([]byte, error) {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("archive ends before %s (truncated?)", want)
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %v", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("entry %q is not a regular file (type %q): links and special files are refused", hdr.Name, hdr.Typeflag)
		}
		if hdr.Name != want {
			return nil, fmt.Errorf("entry %q where %q was expected", hdr.Name, want)
		}
		if hdr.Size < 0 || hdr.Size > limit {
			return nil, fmt.Errorf("entry %q is %d bytes, more than the limit %d", hdr.Name, hdr.Size, limit)
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, fmt.Errorf("entry %q is truncated: %v", hdr.Name, err)
		}
		return data, nil
	}
	mb, err := next(manifestName, maxManifest)
	if err != nil {
		return nil, nil, err
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(mb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, nil, fmt.Errorf("manifest: %v", err)
	}
	if m.Format != archiveFormat {
		return nil, nil, fmt.Errorf("archive format %q, this build reads only %q", m.Format, archiveFormat)
	}
	if len(m.Files) == 0 || len(m.Files) > maxFiles {
		return nil, nil, fmt.Errorf("archive lists %d files; 1 to %d are allowed", len(m.Files), maxFiles)
	}
	seen := map[string]bool{}
	files := make([]archiveFile, 0, len(m.Files))
	for _, mf := range m.Files {
		if err := safeRel(mf.Path); err != nil {
			return nil, nil, err
		}
		if seen[mf.Path] {
			return nil, nil, fmt.Errorf("archive lists %q twice", mf.Path)
		}
		seen[mf.Path] = true
		data, err := next(mf.Path, min(mf.Size, maxFileSize))
		if err != nil {
			return nil, nil, err
		}
		if int64(len(data)) != mf.Size {
			return nil, nil, fmt.Errorf("entry %q is %d bytes, the manifest says %d", mf.Path, len(data), mf.Size)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != mf.SHA256 {
			return nil, nil, fmt.Errorf("entry %q does not match its digest", mf.Path)
		}
		files = append(files, archiveFile{Path: mf.Path, Data: data})
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("archive holds entries the manifest does not list (or is damaged: %v)", err)
	}
	return &m, files, nil
}
