// Package temporalclient connects tether, tether-worker and the soak to
// the Temporal frontend the configuration names, with its client
// certificate, CA, server name and API key (config.TemporalTLS): one
// place, so that the three authenticate alike, and a refused connection
// says what to set.
package temporalclient

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/config"
)

// Options returns o with cfg's frontend address, namespace, TLS and API
// key set, and the calls uncompressed unless cfg asks for gzip. A
// certificate, key or CA file that cannot be read is an error that names
// its variable.
func Options(cfg config.Config, o client.Options) (client.Options, error) {
	o.HostPort, o.Namespace = cfg.TemporalAddress, cfg.Namespace
	if !cfg.TemporalGzip && o.ConnectionOptions.GrpcCompression == nil {
		o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	t := cfg.TemporalTLS
	if t.APIKey != nil {
		o.Credentials = client.NewAPIKeyStaticCredentials(string(t.APIKey))
	}
	switch {
	case t.Disabled:
		o.ConnectionOptions.TLSDisabled = true
	case t.Enabled:
		c, err := TLSConfig(t)
		if err != nil {
			return o, err
		}
		o.ConnectionOptions.TLS = c
	}
	return o, nil
}

// Dial connects with Options(cfg, o). When the connection fails, the
// error says what to set if TLS is the reason.
func Dial(cfg config.Config, o client.Options) (client.Client, error) {
	opts, err := Options(cfg, o)
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(opts)
	if err != nil {
		if h := hint(cfg.TemporalTLS, err); h != "" {
			return nil, fmt.Errorf("%w; %s", err, h)
		}
		return nil, err
	}
	return c, nil
}

// TLSConfig is the client side of the frontend's TLS: its CA (else the
// system's roots), its server name, and the client certificate, loaded now
// so a wrong path fails at start, and again for each new connection so a
// certificate renewed on disk is used without a restart.
func TLSConfig(t config.TemporalTLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the frontend's CA (TEMPORAL_TLS_CA): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("TEMPORAL_TLS_CA=%s holds no PEM certificate: point it at the CA that signed the frontend's certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		pair, err := loadPair(t)
		if err != nil {
			return nil, err
		}
		// A renewal caught half-written keeps the last good pair.
		var mu sync.Mutex
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			mu.Lock()
			defer mu.Unlock()
			if p, err := loadPair(t); err == nil {
				pair = p
			}
			return pair, nil
		}
	}
	return c, nil
}

func loadPair(t config.TemporalTLS) (*tls.Certificate, error) {
	p, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load the client certificate TEMPORAL_TLS_CERT=%s and its key TEMPORAL_TLS_KEY=%s: %w", t.CertFile, t.KeyFile, err)
	}
	return &p, nil
}

const (
	clusterEnv = " (for make cluster: . <(scripts/cluster.sh env))"
	trusted    = "it must be issued by a CA the frontend trusts, and be current"
)

// hint says what to set when err shows that TLS is why a connection
// failed; "" when it does not.
func hint(t config.TemporalTLS, err error) string {
	msg := err.Error()
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	roots := "the system's roots"
	if t.CAFile != "" {
		roots = "TEMPORAL_TLS_CA=" + t.CAFile
	}
	switch {
	case !t.Enabled && has("server preface", "connection reset", "EOF", "frame too large"):
		return "if the frontend uses TLS, set TEMPORAL_TLS_CA, and TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY for mutual TLS" + clusterEnv + ", or TEMPORAL_API_KEY for Temporal Cloud"
	case t.Enabled && has("first record does not look like a TLS handshake"):
		return "the frontend does not use TLS: unset TEMPORAL_TLS_* and TEMPORAL_API_KEY, or point TEMPORAL_ADDRESS at one that does"
	case has("certificate signed by unknown authority"):
		return "the frontend's certificate is not signed by a CA in " + roots + ": set TEMPORAL_TLS_CA to the CA that signed it"
	case has("certificate has expired or is not yet valid"):
		return "the frontend's certificate has expired, or this machine's clock is wrong: renew it (make cluster: scripts/cluster.sh up renews what nears its end)"
	case has("certificate is valid for", "doesn't contain any IP SANs"):
		return "the frontend's certificate does not name the host of TEMPORAL_ADDRESS: set TEMPORAL_TLS_SERVER_NAME to a name it carries"
	case t.CertFile == "" && has("certificate required", "bad certificate", "handshake failure"):
		return "the frontend requires a client certificate: set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY" + clusterEnv
	case t.CertFile != "" && has("certificate required", "bad certificate", "unknown certificate authority", "handshake failure", "expired certificate"):
		return "the frontend refused the client certificate TEMPORAL_TLS_CERT=" + t.CertFile + ": " + trusted
	// The server may close the connection before its alert is read.
	case t.Enabled && t.CertFile == "" && has("broken pipe", "connection reset", "EOF"):
		return "the connection closed during TLS: if the frontend requires a client certificate, set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY" + clusterEnv
	case t.Enabled && has("broken pipe", "connection reset", "EOF"):
		return "the connection closed during TLS: if the frontend refused the client certificate TEMPORAL_TLS_CERT=" + t.CertFile + ", " + trusted
	}
	return ""
}
