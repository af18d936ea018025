package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// clearTemporalTLS unsets every variable temporalTLS reads, so the
// machine's own environment does not leak into a case.
func clearTemporalTLS(t *testing.T) {
	t.Helper()
	for _, v := range temporalTLSVars {
		t.Setenv(v.name, "")
		t.Setenv(v.cli, "")
	}
	for _, n := range []string{"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY", "TEMPORAL_TLS"} {
		t.Setenv(n, "")
	}
}

// setEnv sets each variable of env for the test.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func TestTemporalTLSIsOffUntilSomethingAsksForIt(t *testing.T) {
	clearTemporalTLS(t)
	assert.Equal(t, TemporalTLS{}, fromEnv(t).TemporalTLS)
}

func TestTemporalTLSFromTethersNamesAndTheTemporalCLIs(t *testing.T) {
	want := TemporalTLS{Enabled: true, CertFile: "/tls/cli/cert.pem", KeyFile: "/tls/cli/key.pem", CAFile: "/tls/cli/ca.pem"}
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{"tether", map[string]string{"TEMPORAL_TLS_CERT": want.CertFile, "TEMPORAL_TLS_KEY": want.KeyFile, "TEMPORAL_TLS_CA": want.CAFile}},
		{"temporal CLI", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": want.CertFile, "TEMPORAL_TLS_CLIENT_KEY_PATH": want.KeyFile, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": want.CAFile}},
		{"both, agreeing", map[string]string{
			"TEMPORAL_TLS_CERT": want.CertFile, "TEMPORAL_TLS_CLIENT_CERT_PATH": want.CertFile,
			"TEMPORAL_TLS_KEY": want.KeyFile, "TEMPORAL_TLS_CLIENT_KEY_PATH": want.KeyFile,
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH": want.CAFile,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearTemporalTLS(t)
			setEnv(t, c.env)
			assert.Equal(t, want, fromEnv(t).TemporalTLS)
		})
	}
}

func TestTemporalCloudSettings(t *testing.T) {
	clearTemporalTLS(t)
	t.Setenv("TEMPORAL_API_KEY", "cloud-key-123")
	tt := fromEnv(t).TemporalTLS
	assert.True(t, tt.Enabled, "an API key goes over TLS, with the system's roots")
	assert.Empty(t, tt.CAFile)
	assert.Equal(t, Secret("cloud-key-123"), tt.APIKey)

	// The key never prints.
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("config", "tls", tt)
	for _, s := range []string{fmt.Sprint(tt), fmt.Sprintf("%+v", tt), fmt.Sprintf("%#v", tt), log.String()} {
		assert.NotContains(t, s, "cloud-key-123")
	}

	// Plain text, for a local server that takes a key without TLS.
	t.Setenv("TEMPORAL_TLS", "false")
	tt = fromEnv(t).TemporalTLS
	assert.False(t, tt.Enabled)
	assert.True(t, tt.Disabled)

	// TLS with the system's roots and no credentials at all.
	clearTemporalTLS(t)
	t.Setenv("TEMPORAL_TLS", "true")
	assert.Equal(t, TemporalTLS{Enabled: true}, fromEnv(t).TemporalTLS)

	clearTemporalTLS(t)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "ns.tmprl.cloud")
	assert.Equal(t, TemporalTLS{Enabled: true, ServerName: "ns.tmprl.cloud"}, fromEnv(t).TemporalTLS)
}

func TestTemporalTLSMistakesSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"certificate without key", map[string]string{"TEMPORAL_TLS_CERT": "/c.pem"}, []string{"TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together"}},
		{"key without certificate", map[string]string{"TEMPORAL_TLS_CLIENT_KEY_PATH": "/k.pem"}, []string{"TEMPORAL_TLS_KEY"}},
		{"two names, two files", map[string]string{"TEMPORAL_TLS_CA": "/a.pem", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/b.pem"}, []string{"TEMPORAL_TLS_CA=/a.pem", "TEMPORAL_TLS_SERVER_CA_CERT_PATH=/b.pem", "set one of them"}},
		{"TLS off with a certificate", map[string]string{"TEMPORAL_TLS": "false", "TEMPORAL_TLS_CERT": "/c.pem", "TEMPORAL_TLS_KEY": "/k.pem"}, []string{"TEMPORAL_TLS=false"}},
		{"TLS neither on nor off", map[string]string{"TEMPORAL_TLS": "maybe"}, []string{`TEMPORAL_TLS="maybe"`, "want true or false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearTemporalTLS(t)
			setEnv(t, c.env)
			refused(t, c.want...)
		})
	}
}

func TestTemporalTLSVariablesAreListed(t *testing.T) {
	vars := Variables()
	for _, v := range temporalTLSVars {
		assert.Contains(t, vars, v.name)
		assert.Contains(t, vars, v.cli)
	}
	for _, n := range []string{"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY", "TEMPORAL_TLS"} {
		assert.Contains(t, vars, n)
	}
}
