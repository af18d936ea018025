package answerlink

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	key = bytes.Repeat([]byte{9}, 32)
	now = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
)

func TestLinks(t *testing.T) {
	l := Link{Run: "r1", Question: "judge-2", Answer: "approve", Fixed: true, Expires: now.Add(DefaultTTL)}
	tok, err := Sign(key, l)
	require.NoError(t, err)
	got, err := Verify(key, tok, now)
	require.NoError(t, err)
	assert.Equal(t, l, got)
	require.NoError(t, got.For("r1", "judge-2"))
	assert.ErrorIs(t, got.For("r2", "judge-2"), ErrOtherRun)
	assert.ErrorIs(t, got.For("r1", "judge-3"), ErrOtherQuestion)

	// Every byte of the token matters.
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 1
		_, err := Verify(key, string(b), now)
		require.Error(t, err, "byte %d changed", i)
		assert.True(t, isForgedOrMalformed(err), "byte %d: %v", i, err)
	}
	_, err = Verify(bytes.Repeat([]byte{8}, 32), tok, now)
	assert.ErrorIs(t, err, ErrForged, "another key")
	_, err = Verify(key, tok, now.Add(DefaultTTL))
	assert.ErrorIs(t, err, ErrExpired)
	assert.Contains(t, err.Error(), "2026")
	for _, bad := range []string{"", "x", tok[:len(tok)/2], strings.Repeat("a", maxToken+1), "e30." + strings.Repeat("A", 43)} {
		_, err := Verify(key, bad, now)
		assert.True(t, isForgedOrMalformed(err), "%q: %v", bad, err)
	}

	form, err := Sign(key, Link{Run: "r1", Question: "judge-2", Expires: now.Add(time.Hour)})
	require.NoError(t, err)
	got, err = Verify(key, form, now)
	require.NoError(t, err)
	assert.False(t, got.Fixed, "a form link carries no answer")
	assert.Equal(t, "https://t.example/c/answer/r1/judge-2?t="+form, URL("https://t.example/c/", "r1", "judge-2", form))
	_, err = Sign([]byte("short"), l)
	assert.ErrorContains(t, err, KeyEnv)
}

func isForgedOrMalformed(err error) bool {
	return err != nil && (strings.Contains(err.Error(), ErrForged.Error()) || strings.Contains(err.Error(), ErrMalformed.Error()))
}
