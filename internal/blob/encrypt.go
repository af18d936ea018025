package blob

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// KeyEnv names the environment variable that holds the master key (read
// by internal/config, which passes it to Open as WithEncryptionKey).
const KeyEnv = "TETHER_BLOB_KEY"

// ErrDecrypt reports an encrypted blob that cannot be opened: a different
// master key, tampered or truncated bytes, or a blob that was never
// encrypted.
var ErrDecrypt = errors.New("blob: cannot decrypt")

// Envelope format (all of it authenticated):
//
//	magic "TBE1" | key id (8) | wrap nonce (12) | data key sealed by the
//	master key, AAD = magic|key id|blob key (32+16) | chunks
//
// Each chunk seals up to encChunk plaintext bytes with the blob's own data
// key; the nonce is the chunk counter with a final-chunk flag, so
// reordering, truncation and extension all fail authentication. The data
// key is bound to the blob key, so bytes moved to another key fail too.
const (
	encMagic    = "TBE1"
	encKeyIDLen = 8
	encNonceLen = 12
	encTagLen   = 16
	encDEKLen   = 32
	encHdrLen   = len(encMagic) + encKeyIDLen + encNonceLen + encDEKLen + encTagLen
	encChunk    = 64 << 10
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
	inner Store
	kek   cipher.AEAD
	keyID [encKeyIDLen]byte
}

// Encrypted wraps inner so that every blob is stored as an AES-256-GCM
// envelope under the 32-byte master key. Stat and List report plaintext
// sizes; a blob whose stored size is impossible for an envelope reports
// Size -1 in List and fails Stat with ErrDecrypt.
func Encrypted(inner Store, key []byte) (Store, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("blob: the encryption key must be 32 bytes, got %d", len(key))
	}
	kek, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	e := &encStore{inner: inner, kek: kek}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tether blob key id"))
	copy(e.keyID[:], m.Sum(nil))
	return e, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// cipherSize is the stored size of a plaintext of n bytes.
func cipherSize(n int64) int64 {
	chunks := max(1, (n+encChunk-1)/encChunk)
	return int64(encHdrLen) + n + chunks*encTagLen
}

// plainSize inverts cipherSize.
func plainSize(c int64) (int64, bool) {
	payload := c - int64(encHdrLen)
	if payload < encTagLen {
		return 0, false
	}
	chunks := (payload + encChunk + encTagLen - 1) / (encChunk + encTagLen)
	if payload-(chunks-1)*(encChunk+encTagLen) < encTagLen {
		return 0, false
	}
	return payload - chunks*encTagLen, true
}

func (e *encStore) header(key string) (hdr []byte, dek cipher.AEAD, err error) {
	raw := make([]byte, encDEKLen)
	if _, err := rand.Read(raw); err != nil {
		return nil, nil, err
	}
	hdr = make([]byte, 0, encHdrLen)
	hdr = append(hdr, encMagic...)
	hdr = append(hdr, e.keyID[:]...)
	nonce := make([]byte, encNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	hdr = append(hdr, nonce...)
	hdr = e.kek.Seal(hdr, nonce, raw, e.wrapAAD(key))
	dek, err = newGCM(raw)
	return hdr, dek, err
}

func (e *encStore) wrapAAD(key string) []byte {
	aad := make([]byte, 0, len(encMagic)+encKeyIDLen+len(key))
	aad = append(aad, encMagic...)
	aad = append(aad, e.keyID[:]...)
	return append(aad, key...)
}

// open reads and checks the header of an envelope.
func (e *encStore) open(key string, r io.Reader) (cipher.AEAD, error) {
	hdr := make([]byte, encHdrLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: %q is too short to be an encrypted blob (stored without encryption, or truncated)", ErrDecrypt, key)
		}
		return nil, fmt.Errorf("blob: get %q: %w", key, err)
	}
	if string(hdr[:len(encMagic)]) != encMagic {
		return nil, fmt.Errorf("%w: %q is not an encrypted blob (stored without encryption?)", ErrDecrypt, key)
	}
	id := hdr[len(encMagic) : len(encMagic)+encKeyIDLen]
	if !bytes.Equal(id, e.keyID[:]) {
		return nil, fmt.Errorf("%w: %q was encrypted with another master key (key id %x; the configured key has id %x; check %s)", ErrDecrypt, key, id, e.keyID, KeyEnv)
	}
	off := len(encMagic) + encKeyIDLen
	nonce := hdr[off : off+encNonceLen]
	raw, err := e.kek.Open(nil, nonce, hdr[off+encNonceLen:], e.wrapAAD(key))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: the envelope header fails authentication (tampered, or moved from another key)", ErrDecrypt, key)
	}
	return newGCM(raw)
}

func chunkNonce(n []byte, ctr uint64, final bool) {
	clear(n)
	binary.BigEndian.PutUint64(n, ctr)
	if final {
		n[encNonceLen-1] = 1
	}
}

// sealer turns a plaintext stream into an envelope stream.
type sealer struct {
	pr    partReader
	dek   cipher.AEAD
	plain []byte
	out   []byte
	off   int
	ctr   uint64
	nonce [encNonceLen]byte
	done  bool
}

func (s *sealer) Read(p []byte) (int, error) {
	for s.off == len(s.out) {
		if s.done {
			return 0, io.EOF
		}
		n, last, err := s.pr.fill(s.plain)
		if err != nil {
			return 0, err
		}
		chunkNonce(s.nonce[:], s.ctr, last)
		s.ctr++
		s.out = s.dek.Seal(s.out[:0], s.nonce[:], s.plain[:n], nil)
		s.off = 0
		s.done = last
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

// opener turns an envelope stream back into plaintext, failing with
// ErrDecrypt on any tampering.
type opener struct {
	key   string
	body  io.ReadCloser
	pr    partReader
	dek   cipher.AEAD
	in    []byte
	out   []byte
	off   int
	ctr   uint64
	nonce [encNonceLen]byte
	done  bool
}

func (o *opener) Read(p []byte) (int, error) {
	for o.off == len(o.out) {
		if o.done {
			return 0, io.EOF
		}
		n, last, err := o.pr.fill(o.in)
		if err != nil {
			return 0, fmt.Errorf("blob: get %q: %w", o.key, err)
		}
		chunkNonce(o.nonce[:], o.ctr, last)
		o.ctr++
		o.out, err = o.dek.Open(o.out[:0], o.nonce[:], o.in[:n], nil)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: chunk %d fails authentication (tampered or truncated)", ErrDecrypt, o.key, o.ctr-1)
		}
		o.off = 0
		o.done = last
	}
	n := copy(p, o.out[o.off:])
	o.off += n
	return n, nil
}

func (o *opener) Close() error { return o.body.Close() }

func (e *encStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := applyPut(opts)
	hdr, dek, err := e.header(key)
	if err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	src := putReader(ctx, key, r, size)
	var h hash.Hash
	if o.createOnly {
		h = sha256.New()
		src = io.TeeReader(src, h)
	}
	s := &sealer{pr: partReader{r: src}, dek: dek, plain: make([]byte, encChunk), out: hdr}
	csize := int64(-1)
	if size >= 0 {
		csize = cipherSize(size)
	}
	err = e.inner.Put(ctx, key, s, csize, opts...)
	if !o.createOnly || !errors.Is(err, ErrExists) {
		return err
	}
	// Every envelope has a fresh data key, so the inner store always sees
	// different bytes; compare plaintexts instead.
	if _, err := io.Copy(io.Discard, &s.pr); err != nil {
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
	dek, err := e.open(key, body)
	if err != nil {
		body.Close()
		return nil, err
	}
	return &opener{key: key, body: body, pr: partReader{r: body}, dek: dek, in: make([]byte, encChunk+encTagLen)}, nil
}

func (e *encStore) Stat(ctx context.Context, key string) (Info, error) {
	in, err := e.inner.Stat(ctx, key)
	if err != nil {
		return Info{}, err
	}
	n, ok := plainSize(in.Size)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q has %d bytes, which no envelope has", ErrDecrypt, key, in.Size)
	}
	in.Size = n
	return in, nil
}

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
