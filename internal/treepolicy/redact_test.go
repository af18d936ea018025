package treepolicy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactTextHidesKeysAndKeepsTheRest(t *testing.T) {
	key := "sk-ant-" + strings.Repeat("a1B2", 10)
	aws := "AKIA" + "ABCDEFGHIJKLMNOP"
	in := "first line stays\nexport ANTHROPIC_API_KEY=" + key + " # set\nid " + aws + "\nlast line stays"
	got := RedactText(in)
	require.NotContains(t, got, key)
	require.NotContains(t, got, aws)
	require.Contains(t, got, "first line stays\nexport ANTHROPIC_API_KEY=[redacted] # set\n")
	require.True(t, strings.HasSuffix(got, "\nlast line stays"), got)

	plain := "nothing secret here: sha256 " + strings.Repeat("ab", 32)
	require.Equal(t, plain, RedactText(plain))

	pem := "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nafter"
	got = RedactText(pem)
	require.NotContains(t, got, "MIIEpAIBAAKCAQEA")
	require.Equal(t, "before\n[redacted] private key\nafter", got)
}
