package fakemodel

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnlyItsKeyIsAnswered: each API's request is answered only with the
// server's key where that API carries it; a wrong key, a placeholder, none,
// or the key in another API's header is refused with 401 in the API's
// format, and recorded as refused, never as a turn.
func TestOnlyItsKeyIsAnswered(t *testing.T) {
	s := Start(t)
	type try struct {
		name, path, header, value string
		ok                        bool
		want                      string
	}
	chat := `{"model":"m","messages":[{"role":"user","content":"a"}]}`
	msgs := `{"model":"m","messages":[{"role":"user","content":"a"}]}`
	gem := `{"contents":[{"role":"user","parts":[{"text":"a"}]}]}`
	for _, c := range []struct {
		try
		body string
	}{
		{try{"messages x-api-key", "/v1/messages", "X-Api-Key", s.Key(), true, "turn 1: a"}, msgs},
		{try{"messages bearer", "/v1/messages", "Authorization", "Bearer " + s.Key(), true, "turn 1: a"}, msgs},
		{try{"messages placeholder", "/v1/messages", "X-Api-Key", "tether-placeholder-0", false, "authentication_error"}, msgs},
		{try{"messages goog header", "/v1/messages", "X-Goog-Api-Key", s.Key(), false, "authentication_error"}, msgs},
		{try{"chat bearer", "/v1/chat/completions", "Authorization", "Bearer " + s.Key(), true, "turn 1: a"}, chat},
		{try{"chat x-api-key", "/v1/chat/completions", "X-Api-Key", s.Key(), false, "invalid_api_key"}, chat},
		{try{"responses none", "/v1/responses", "", "", false, "invalid_api_key"}, `{"model":"m","input":"a"}`},
		{try{"gemini header", "/v1beta/models/m:generateContent", "X-Goog-Api-Key", s.Key(), true, "turn 1: a"}, gem},
		{try{"gemini query", "/v1beta/models/m:generateContent?key=" + s.Key(), "", "", true, "turn 1: a"}, gem},
		{try{"gemini wrong", "/v1beta/models/m:generateContent?key=nope", "", "", false, "UNAUTHENTICATED"}, gem},
		{try{"other none", "/v1/models", "", "", false, "invalid_api_key"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			req, err := http.NewRequest(http.MethodPost, s.URL()+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			if c.header != "" {
				req.Header.Set(c.header, c.value)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Contains(t, string(b), c.want)
			reqs := s.Requests()
			require.Len(t, reqs, 1)
			if c.ok {
				assert.Equal(t, 200, resp.StatusCode)
				assert.Equal(t, s.Key(), reqs[0].Key)
				assert.False(t, reqs[0].Refused)
				return
			}
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.True(t, reqs[0].Refused)
			assert.Empty(t, s.Turns())
			assert.Len(t, s.Refused(), 1)
		})
	}
}

// TestTokensCue: every request of a turn whose prompt says TOKENS: N costs
// exactly N tokens, on every API.
func TestTokensCue(t *testing.T) {
	s := start(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"go\nTOKENS: 400"}]}`},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go\nTOKENS: 400"}]}`},
		{"/v1/responses", `{"model":"m","input":"go\nTOKENS: 400"}`},
		{"/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"go\nTOKENS: 400"}]}]}`},
	} {
		s.Reset()
		resp, _ := post(t, s.URL()+c.path, c.body)
		require.Equal(t, 200, resp.StatusCode, c.path)
		u := s.Usage()
		assert.Equal(t, 400, u.Input+u.Output+u.CacheRead+u.CacheWrite, c.path)
		assert.Zero(t, u.CacheRead+u.CacheWrite, c.path)
	}
}
