package packer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVerifyDigest(t *testing.T) {
	blob := craft(t, testBackend, testID, file("project/"+testID+".jsonl", "{}"))
	d := Digest(blob)
	assert.NoError(t, VerifyDigest(blob, d))
	assert.NoError(t, VerifyDigest(blob, d[:7]+strings.ToUpper(d[7:])), "hex case does not matter")

	other := append([]byte(nil), blob...)
	other[len(other)-1] ^= 1
	err := VerifyDigest(other, d)
	assert.ErrorIs(t, err, ErrDigestMismatch)
	assert.Contains(t, err.Error(), d)
	assert.Contains(t, err.Error(), Digest(other))

	for _, bad := range []string{"", "sha256:", "md5:abc", d[:len(d)-1], "sha256:" + strings.Repeat("z", 64)} {
		assert.ErrorIs(t, VerifyDigest(blob, bad), ErrDigestMismatch, "%q", bad)
	}
}
