package config

import "fmt"

// TemporalTLS is how tether, tether-worker and the soak prove who they are
// to the Temporal frontend, and check that it is the one they meant: a
// client certificate (mutual TLS, as `make cluster` and docker compose
// run it), an API key (Temporal Cloud), or both. Any of them turns TLS on.
type TemporalTLS struct {
	// Enabled dials the frontend with TLS.
	Enabled bool
	// CertFile and KeyFile are the client certificate and its key, PEM
	// files (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY).
	CertFile, KeyFile string
	// CAFile verifies the frontend's certificate (TEMPORAL_TLS_CA); empty:
	// the system's roots, as for Temporal Cloud.
	CAFile string
	// ServerName is the name the frontend's certificate must carry
	// (TEMPORAL_TLS_SERVER_NAME); empty: the host of TEMPORAL_ADDRESS.
	ServerName string
	// APIKey is sent with every call (TEMPORAL_API_KEY). Printed or
	// logged, it shows as [redacted].
	APIKey Secret
	// Disabled is TEMPORAL_TLS=false: an API key in plain text, to a
	// local server that takes one without TLS.
	Disabled bool
}

// temporalTLSVars are the settings that take a file, each under Tether's
// name and under the Temporal CLI's, so that one environment serves both.
var temporalTLSVars = []struct{ name, cli string }{
	{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH"},
	{"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH"},
	{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
}

// temporalTLS reads TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA
// (or the Temporal CLI's TEMPORAL_TLS_CLIENT_CERT_PATH,
// TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH),
// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY and TEMPORAL_TLS.
func temporalTLS() (TemporalTLS, error) {
	var files [3]string
	for i, v := range temporalTLSVars {
		a, b := getenv(v.name), getenv(v.cli)
		if a != "" && b != "" && a != b {
			return TemporalTLS{}, fmt.Errorf("%s=%s and %s=%s name different files: set one of them", v.name, a, v.cli, b)
		}
		files[i] = a
		if a == "" {
			files[i] = b
		}
	}
	t := TemporalTLS{CertFile: files[0], KeyFile: files[1], CAFile: files[2], ServerName: getenv("TEMPORAL_TLS_SERVER_NAME")}
	if k := getenv("TEMPORAL_API_KEY"); k != "" {
		t.APIKey = Secret(k)
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return t, fmt.Errorf("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: a client certificate needs its key (for make cluster: . <(scripts/cluster.sh env))")
	}
	t.Enabled = t.CertFile != "" || t.CAFile != "" || t.ServerName != "" || t.APIKey != nil
	switch v := getenv("TEMPORAL_TLS"); v {
	case "":
	case "1", "true":
		t.Enabled = true
	case "0", "false":
		if t.CertFile != "" || t.CAFile != "" || t.ServerName != "" {
			return t, fmt.Errorf("TEMPORAL_TLS=%s, yet a client certificate, CA or server name is set: unset TEMPORAL_TLS, or the TEMPORAL_TLS_* files", v)
		}
		t.Enabled, t.Disabled = false, true
	default:
		return t, fmt.Errorf("TEMPORAL_TLS=%q: want true or false", v)
	}
	return t, nil
}
