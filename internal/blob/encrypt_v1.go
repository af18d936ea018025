package blob

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"io"
)

// The first envelope format (version '1', magic "TBE1"), read only: blobs
// stored before the move to Tink's streaming AEAD must still open. Nothing
// writes it any more.
//
//	magic "TBE1" | key id (8) | wrap nonce (12) | data key sealed by the
//	master key with AES-256-GCM, AAD = magic|key id|blob key (32+16) |
//	chunks of up to 64 KiB sealed by the data key, the nonce being the
//	chunk counter with a final-chunk flag in its last byte
const (
	v1KeyIDLen = 8
	v1NonceLen = 12
	v1TagLen   = 16
	v1DEKLen   = 32
	v1HdrLen   = magicLen + v1KeyIDLen + v1NonceLen + v1DEKLen + v1TagLen
	v1Chunk    = 64 << 10
)

// v1PlainSize is the plaintext size of a v1 envelope of c bytes.
func v1PlainSize(c int64) (int64, bool) {
	payload := c - int64(v1HdrLen)
	if payload < v1TagLen {
		return 0, false
	}
	chunks := (payload + v1Chunk + v1TagLen - 1) / (v1Chunk + v1TagLen)
	if payload-(chunks-1)*(v1Chunk+v1TagLen) < v1TagLen {
		return 0, false
	}
	return payload - chunks*v1TagLen, true
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// openV1 reads the rest of a v1 header (magic already read) and returns
// the reader of the plaintext.
func (e *encStore) openV1(key string, body io.ReadCloser) (io.ReadCloser, error) {
	hdr := make([]byte, v1HdrLen)
	copy(hdr, magicV1)
	if _, err := io.ReadFull(body, hdr[magicLen:]); err != nil {
		return nil, e.headerErr(key, err)
	}
	id := hdr[magicLen : magicLen+v1KeyIDLen]
	if !bytes.Equal(id, e.keyID[:]) {
		return nil, e.otherKey(key, id)
	}
	off := magicLen + v1KeyIDLen
	nonce := hdr[off : off+v1NonceLen]
	aad := append(append([]byte(magicV1), id...), key...)
	raw, err := e.kekV1.Open(nil, nonce, hdr[off+v1NonceLen:], aad)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: the envelope header fails authentication (tampered, or moved from another key)", ErrDecrypt, key)
	}
	dek, err := newGCM(raw)
	if err != nil {
		return nil, err
	}
	return &v1Opener{key: key, body: body, pr: partReader{r: body}, dek: dek, in: make([]byte, v1Chunk+v1TagLen)}, nil
}

// v1Opener turns a v1 chunk stream back into plaintext, failing with
// ErrDecrypt on any tampering.
type v1Opener struct {
	key   string
	body  io.ReadCloser
	pr    partReader
	dek   cipher.AEAD
	in    []byte
	out   []byte
	off   int
	ctr   uint64
	nonce [v1NonceLen]byte
	done  bool
}

func (o *v1Opener) Read(p []byte) (int, error) {
	for o.off == len(o.out) {
		if o.done {
			return 0, io.EOF
		}
		n, last, err := o.pr.fill(o.in)
		if err != nil {
			return 0, fmt.Errorf("blob: get %q: %w", o.key, err)
		}
		clear(o.nonce[:])
		binary.BigEndian.PutUint64(o.nonce[:], o.ctr)
		if last {
			o.nonce[v1NonceLen-1] = 1
		}
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

func (o *v1Opener) Close() error { return o.body.Close() }
