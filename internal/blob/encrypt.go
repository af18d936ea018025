package blob

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tink-crypto/tink-go/v2/streamingaead/subtle"
	tinksubtle "github.com/tink-crypto/tink-go/v2/subtle"
)

// KeyEnv names the environment variable that holds the master key (read
// by internal/config, which passes it to Open as WithEncryptionKey).
const KeyEnv = "TETHER_BLOB_KEY"

// ErrDecrypt reports an encrypted blob that cannot be opened: a different
// master key, tampered or truncated bytes, or a blob that was never
// encrypted.
var ErrDecrypt = errors.New("blob: cannot decrypt")

// Envelope format. Every envelope starts with a four-byte magic whose last
// byte is the format version, then the master key's 8-byte id:
//
//	"TBE2" | key id (8) | Tink AES256-GCM-HKDF stream
//
// The stream (Tink's streaming AEAD, reviewed and interoperable; see
// docs/storage.md) derives a fresh AES-256-GCM key per blob from the
// stream key and a random salt, and seals 64 KiB segments whose nonces
// carry a counter and a last-segment flag, so reordering, truncation and
// extension fail. Its associated data is magic|key id|blob key, so bytes
// moved to another key fail too. "TBE1" envelopes, the previous hand-made
// format, are still read (encrypt_v1.go).
const (
	magicLen   = 4
	magicV1    = "TBE1"
	magicV2    = "TBE2"
	keyIDLen   = 8
	prefixLen  = magicLen + keyIDLen
	segmentLen = 64 << 10 // ciphertext segment, tag included
	tagLen     = subtle.AESGCMHKDFTagSizeInBytes
	// streamHdrLen is Tink's header: its length byte, the 32-byte salt
	// and the 7-byte nonce prefix.
	streamHdrLen = 1 + 32 + subtle.AESGCMHKDFNoncePrefixSizeInBytes
	// firstPlain and restPlain are the plaintext bytes the first and the
	// following segments hold: the first shares its segment with the
	// prefix and Tink's header.
	firstPlain = segmentLen - tagLen - prefixLen - streamHdrLen
	restPlain  = segmentLen - tagLen
)

// ParseKey decodes a 32-byte master key written as 64 hex digits or as
// base64 (standard or URL alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 64 {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == 32 {
			return k, nil
		}
	}
	return nil, fmt.Errorf("blob: the encryption key must be 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`); got %d characters", len(s))
}

type encStore struct {
	inner  Store
	stream *subtle.AESGCMHKDF
	kekV1  interface {
		Open(dst, nonce, ciphertext, aad []byte) ([]byte, error)
	}
	keyID [keyIDLen]byte
}

// Encrypted wraps inner so that every blob is stored encrypted and
// authenticated under the 32-byte master key, with Tink's streaming AEAD
// (AES256-GCM-HKDF, 64 KiB segments). Stat reports plaintext sizes; List
// reports them as the current format computes them (see List).
func Encrypted(inner Store, key []byte) (Store, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("blob: the encryption key must be 32 bytes, got %d", len(key))
	}
	// The stream key is derived, not the master key itself, so the master
	// key keeps one use per format (it wrapped v1's data keys).
	sk, err := tinksubtle.ComputeHKDF("SHA256", key, nil, []byte("tether blob stream v2"), 32)
	if err != nil {
		return nil, err
	}
	stream, err := subtle.NewAESGCMHKDF(sk, "SHA256", 32, segmentLen, prefixLen)
	if err != nil {
		return nil, err
	}
	kek, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	e := &encStore{inner: inner, stream: stream, kekV1: kek}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tether blob key id"))
	copy(e.keyID[:], m.Sum(nil))
	return e, nil
}

// cipherSize is the stored size of a plaintext of n bytes.
func cipherSize(n int64) int64 {
	segs := int64(1)
	if n > firstPlain {
		segs += (n - firstPlain + restPlain - 1) / restPlain
	}
	return prefixLen + streamHdrLen + n + segs*tagLen
}

// plainSize inverts cipherSize: the writer never ends on an empty segment
// after a full one, so a last segment holds at least one byte unless it
// is the only one.
func plainSize(c int64) (int64, bool) {
	payload := c - prefixLen - streamHdrLen
	if payload < tagLen {
		return 0, false
	}
	if payload <= firstPlain+tagLen {
		return payload - tagLen, true
	}
	rest := payload - (firstPlain + tagLen)
	segs := (rest + segmentLen - 1) / segmentLen
	if last := rest - (segs-1)*segmentLen; last <= tagLen {
		return 0, false
	}
	return payload - (segs+1)*tagLen, true
}

// aad binds a stream to its format, master key and blob key.
func (e *encStore) aad(key string) []byte {
	a := make([]byte, 0, prefixLen+len(key))
	a = append(a, magicV2...)
	a = append(a, e.keyID[:]...)
	return append(a, key...)
}

// sealer turns a plaintext stream into an envelope stream by pulling:
// each Read feeds the encrypting writer until it has emitted bytes.
type sealer struct {
	src  io.Reader
	w    io.WriteCloser
	out  bytes.Buffer
	in   []byte
	done bool
}

func (e *encStore) newSealer(key string, src io.Reader) (*sealer, error) {
	s := &sealer{src: src, in: make([]byte, 32<<10)}
	s.out.WriteString(magicV2)
	s.out.Write(e.keyID[:])
	w, err := e.stream.NewEncryptingWriter(&s.out, e.aad(key))
	if err != nil {
		return nil, err
	}
	s.w = w
	return s, nil
}

func (s *sealer) Read(p []byte) (int, error) {
	for s.out.Len() == 0 {
		if s.done {
			return 0, io.EOF
		}
		n, err := s.src.Read(s.in)
		if n > 0 {
			if _, werr := s.w.Write(s.in[:n]); werr != nil {
				return 0, werr
			}
		}
		switch {
		case err == io.EOF:
			if cerr := s.w.Close(); cerr != nil {
				return 0, cerr
			}
			s.done = true
		case err != nil:
			return 0, err
		}
	}
	return s.out.Read(p)
}

// bodyErr remembers the first error of the stored body other than its
// end, so a store fault mid-stream stays a (transient) store fault and
// only a failure of the bytes themselves becomes ErrDecrypt.
type bodyErr struct {
	r   io.Reader
	err error
}

func (b *bodyErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// opener is the plaintext of a v2 envelope.
type opener struct {
	key  string
	body io.ReadCloser
	src  *bodyErr
	r    io.Reader
}

func (o *opener) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	if o.src.err != nil {
		return n, fmt.Errorf("blob: get %q: %w", o.key, o.src.err)
	}
	return n, fmt.Errorf("%w: %q: a segment fails authentication (tampered or truncated)", ErrDecrypt, o.key)
}

func (o *opener) Close() error { return o.body.Close() }

func (e *encStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := applyPut(opts)
	src, h := hashedPutReader(ctx, key, r, size, o)
	s, err := e.newSealer(key, src)
	if err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	csize := int64(-1)
	if size >= 0 {
		csize = cipherSize(size)
	}
	err = e.inner.Put(ctx, key, s, csize, opts...)
	if !o.createOnly || !errors.Is(err, ErrExists) {
		return err
	}
	// Every envelope has a fresh salt, so the inner store always sees
	// different bytes; compare plaintexts instead.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	rc, err := e.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("blob: put %q: compare with the existing blob: %w", key, err)
	}
	defer rc.Close()
	old := sha256.New()
	if _, err := io.Copy(old, rc); err != nil {
		return fmt.Errorf("blob: put %q: compare with the existing blob: %w", key, err)
	}
	if !bytes.Equal(old.Sum(nil), h.Sum(nil)) {
		return fmt.Errorf("%w: %q holds different bytes", ErrExists, key)
	}
	return nil
}

func (e *encStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	body, err := e.inner.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	rc, err := e.open(key, body)
	if err != nil {
		body.Close()
		return nil, err
	}
	return rc, nil
}

// open reads the magic and dispatches on the format version.
func (e *encStore) open(key string, body io.ReadCloser) (io.ReadCloser, error) {
	magic := make([]byte, magicLen)
	if _, err := io.ReadFull(body, magic); err != nil {
		return nil, e.headerErr(key, err)
	}
	switch string(magic) {
	case magicV1:
		return e.openV1(key, body)
	case magicV2:
	default:
		return nil, fmt.Errorf("%w: %q is not an encrypted blob (stored without encryption?)", ErrDecrypt, key)
	}
	id := make([]byte, keyIDLen)
	if _, err := io.ReadFull(body, id); err != nil {
		return nil, e.headerErr(key, err)
	}
	if !bytes.Equal(id, e.keyID[:]) {
		return nil, e.otherKey(key, id)
	}
	src := &bodyErr{r: body}
	r, err := e.stream.NewDecryptingReader(src, e.aad(key))
	if err != nil {
		if src.err != nil {
			return nil, fmt.Errorf("blob: get %q: %w", key, src.err)
		}
		return nil, fmt.Errorf("%w: %q: the stream header is cut short or malformed", ErrDecrypt, key)
	}
	return &opener{key: key, body: body, src: src, r: r}, nil
}

func (e *encStore) headerErr(key string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %q is too short to be an encrypted blob (stored without encryption, or truncated)", ErrDecrypt, key)
	}
	return fmt.Errorf("blob: get %q: %w", key, err)
}

func (e *encStore) otherKey(key string, id []byte) error {
	return fmt.Errorf("%w: %q was encrypted with another master key (key id %x; the configured key has id %x; check %s)", ErrDecrypt, key, id, e.keyID, KeyEnv)
}

// Stat reports the plaintext size. The stored size alone cannot say which
// format a blob has, so Stat reads the blob's first bytes as well.
func (e *encStore) Stat(ctx context.Context, key string) (Info, error) {
	in, err := e.inner.Stat(ctx, key)
	if err != nil {
		return Info{}, err
	}
	sizeOf := plainSize
	if in.Size >= magicLen {
		rc, err := e.inner.Get(ctx, key)
		if err != nil {
			return Info{}, err
		}
		magic := make([]byte, magicLen)
		_, err = io.ReadFull(rc, magic)
		rc.Close()
		if err != nil {
			return Info{}, e.headerErr(key, err)
		}
		if string(magic) == magicV1 {
			sizeOf = v1PlainSize
		}
	}
	n, ok := sizeOf(in.Size)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q has %d bytes, which no envelope has", ErrDecrypt, key, in.Size)
	}
	in.Size = n
	return in, nil
}

// List reports plaintext sizes as the current format computes them from
// the stored sizes, without reading any blob: a blob of the previous
// format (TBE1) is reported at most 20 bytes off, or -1 where its stored
// size is impossible for the current format. Stat is exact.
func (e *encStore) List(ctx context.Context, prefix string) ([]Info, error) {
	infos, err := e.inner.List(ctx, prefix)
	for i := range infos {
		n, ok := plainSize(infos[i].Size)
		if !ok {
			n = -1
		}
		infos[i].Size = n
	}
	return infos, err
}

func (e *encStore) Delete(ctx context.Context, key string) error { return e.inner.Delete(ctx, key) }

func (e *encStore) Close() error { return e.inner.Close() }
