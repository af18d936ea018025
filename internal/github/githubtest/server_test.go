package githubtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The double refuses what GitHub would: a request without a valid token,
// and any endpoint it does not implement (listed by Refused).
func TestRefusesWhatItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644))
	s := New(t, "acme/widgets", dir, "ghs_")
	get := func(path, token string) int {
		req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get("/repos/acme/widgets/issues/1/comments", ""))
	assert.Equal(t, http.StatusUnauthorized, get("/repos/acme/widgets/issues/1/comments", "ghs_forged"))
	s.mu.Lock()
	s.tokens["ghs_ok"] = s.tokensExpiry()
	s.mu.Unlock()
	assert.Equal(t, http.StatusOK, get("/repos/acme/widgets/issues/1/comments", "ghs_ok"))
	assert.Equal(t, http.StatusNotFound, get("/user", "ghs_ok"))
	assert.Equal(t, http.StatusNotFound, get("/repos/acme/other/issues/1/comments", "ghs_ok"))
	require.Len(t, s.Refused(), 2)
	assert.True(t, strings.HasPrefix(s.Refused()[0].Path, "/user"))

	// The App's token endpoint wants the App's JWT.
	req, err := http.NewRequest(http.MethodPost, s.URL+"/app/installations/90210/access_tokens", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer not.a.jwt")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
