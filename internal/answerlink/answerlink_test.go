package answerlink

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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
	l := Link{Run: "r1", Question: "judge-2", Asking: "waiting/judge-2/7", Answer: "approve", Fixed: true, Expires: now.Add(DefaultTTL)}
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

	form, err := Sign(key, Link{Run: "r1", Question: "judge-2", Asking: "waiting/judge-2/7", Expires: now.Add(time.Hour)})
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

// A link answers the asking it was sent for, and no later one: the same
// question asked again (after a rewind, or a resume that ran its node
// again) refuses it, whatever the rest of the link says.
func TestALinkAnswersOneAsking(t *testing.T) {
	l := Link{Run: "r1", Question: "approve-1", Asking: "waiting/approve-1/4", Answer: "ship", Fixed: true, Expires: now.Add(time.Hour)}
	tok, err := Sign(key, l)
	require.NoError(t, err)
	got, err := Verify(key, tok, now)
	require.NoError(t, err)
	assert.Equal(t, "waiting/approve-1/4", got.Asking)
	require.NoError(t, got.Answers("waiting/approve-1/4"))
	err = got.Answers("waiting/approve-1/9")
	assert.ErrorIs(t, err, ErrAskedAgain)
	assert.Contains(t, err.Error(), "waiting/approve-1/9")

	// A link must name its asking.
	l.Asking = ""
	_, err = Sign(key, l)
	assert.ErrorContains(t, err, "names no asking")
}

// A link made before links named an asking (version 1) is genuine, but
// cannot say which asking it was sent for: it is refused as old, after
// the checks every link gets (a changed one is forged, an expired one
// expired). A version 2 payload without an asking, or a version 1 with
// one, is no link this package makes.
func TestOldLinksAreRefused(t *testing.T) {
	old := sign(t, map[string]any{"v": 1, "r": "r1", "q": "approve-1", "a": "ship", "x": now.Add(time.Hour).Unix()})
	l, err := Verify(key, old, now)
	assert.ErrorIs(t, err, ErrOldLink)
	assert.Equal(t, "approve-1", l.Question, "the link says what it was for")
	_, err = Verify(key, old, now.Add(2*time.Hour))
	assert.ErrorIs(t, err, ErrExpired)
	_, err = Verify(bytes.Repeat([]byte{8}, 32), old, now)
	assert.ErrorIs(t, err, ErrForged)

	for _, p := range []map[string]any{
		{"v": 2, "r": "r1", "q": "approve-1", "x": now.Add(time.Hour).Unix()},
		{"v": 1, "r": "r1", "q": "approve-1", "k": "waiting/approve-1/4", "x": now.Add(time.Hour).Unix()},
		{"v": 3, "r": "r1", "q": "approve-1", "k": "waiting/approve-1/4", "x": now.Add(time.Hour).Unix()},
	} {
		_, err := Verify(key, sign(t, p), now)
		assert.ErrorIs(t, err, ErrMalformed, "%v", p)
	}
}

// sign makes a token of any payload, as Sign would.
func sign(t *testing.T, p map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(raw) + "." + enc.EncodeToString(mac(key, raw))
}
