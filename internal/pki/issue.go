package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"time"
)

// Lifetimes of what Ensure issues. A cluster is re-certified by running
// Ensure again (scripts/cluster.sh does on every start): it reissues every
// certificate that expires within RenewBefore, and keeps the client CA, so
// clients need nothing new but their own certificate.
const (
	CALifetime   = 5 * 365 * 24 * time.Hour
	LeafLifetime = 365 * 24 * time.Hour
	RenewBefore  = 30 * 24 * time.Hour
)

// Options say where Ensure writes and for which addresses.
type Options struct {
	// Dir is where the role directories go.
	Dir string
	// Hosts are the DNS names and IP addresses clients dial the frontend
	// at (127.0.0.1 and localhost for make cluster; the service name in
	// docker compose).
	Hosts []string
	// Owner, when set, owns every directory and file Ensure writes: the
	// user the consuming containers run as, when Ensure runs as root.
	Owner *Owner
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Owner is a numeric user and group.
type Owner struct{ UID, GID int }

// leaf is one certificate Ensure keeps valid.
type leaf struct {
	dir, cert, key string
	name           string
	server, client bool
	hosts          []string
}

// Ensure makes o.Dir hold a valid set of the cluster's certificates and
// returns the names of those it issued (none when every one was kept). A
// certificate is kept when it and its key are readable, match, chain to
// their CA, cover the hosts asked for and expire after RenewBefore; else
// it is issued again, and a new client CA means every client certificate
// is.
func Ensure(o Options) ([]string, error) {
	if o.Dir == "" {
		return nil, errors.New("pki: no directory to write the certificates to")
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	w := writer{owner: o.Owner}
	var issued []string
	for _, d := range []string{"", RoleCA, RoleServer, RoleWorker, RoleCLI, RoleUI} {
		if err := w.dir(filepath.Join(o.Dir, d)); err != nil {
			return nil, err
		}
	}

	caCertPath, caKeyPath := filepath.Join(o.Dir, RoleCA, CAFile), filepath.Join(o.Dir, RoleCA, KeyFile)
	ca, caKey, err := load(caCertPath, caKeyPath)
	if err != nil || !ca.IsCA || !fresh(ca, now()) {
		if ca, caKey, err = newCA("Tether cluster client CA", now()); err != nil {
			return nil, err
		}
		if err := w.pair(caCertPath, caKeyPath, ca, caKey); err != nil {
			return nil, err
		}
		issued = append(issued, "client CA")
	}
	caPEM := encodeCert(ca)
	for _, d := range []string{RoleServer, RoleWorker, RoleCLI, RoleUI} {
		if err := w.file(filepath.Join(o.Dir, d, CAFile), caPEM, 0o644); err != nil {
			return nil, err
		}
	}
	leaves := []leaf{
		{dir: RoleServer, cert: FrontendCertFile, key: FrontendKeyFile, name: FrontendName, server: true, hosts: append([]string{FrontendName}, o.Hosts...)},
		{dir: RoleServer, cert: SystemWorkerCertFile, key: SystemWorkerKeyFile, name: "temporal-system-worker", client: true},
		{dir: RoleWorker, cert: CertFile, key: KeyFile, name: "tether-worker", client: true},
		{dir: RoleCLI, cert: CertFile, key: KeyFile, name: "tether-cli", client: true},
		{dir: RoleUI, cert: CertFile, key: KeyFile, name: "temporal-ui", client: true},
	}
	for _, l := range leaves {
		certPath, keyPath := filepath.Join(o.Dir, l.dir, l.cert), filepath.Join(o.Dir, l.dir, l.key)
		if valid(certPath, keyPath, ca, l.hosts, now()) {
			continue
		}
		cert, key, err := issue(l, ca, caKey, now())
		if err != nil {
			return nil, err
		}
		if err := w.pair(certPath, keyPath, cert, key); err != nil {
			return nil, err
		}
		issued = append(issued, l.name)
	}

	// The internode CA's key is used once and dropped: the internode
	// certificate is reissued with a new CA, which only the server, which
	// holds both, needs to trust.
	srv := filepath.Join(o.Dir, RoleServer)
	inCAPath, inCertPath, inKeyPath := filepath.Join(srv, InternodeCAFile), filepath.Join(srv, InternodeCertFile), filepath.Join(srv, InternodeKeyFile)
	inCA, err := readCert(inCAPath)
	if err != nil || !inCA.IsCA || !fresh(inCA, now()) || !valid(inCertPath, inKeyPath, inCA, []string{InternodeName}, now()) {
		inCA, inCAKey, err := newCA("Tether cluster internode CA", now())
		if err != nil {
			return nil, err
		}
		cert, key, err := issue(leaf{name: InternodeName, server: true, client: true, hosts: []string{InternodeName}}, inCA, inCAKey, now())
		if err != nil {
			return nil, err
		}
		if err := w.file(inCAPath, encodeCert(inCA), 0o644); err != nil {
			return nil, err
		}
		if err := w.pair(inCertPath, inKeyPath, cert, key); err != nil {
			return nil, err
		}
		issued = append(issued, "internode")
	}
	return issued, nil
}

// fresh reports whether c is valid now and for longer than RenewBefore.
func fresh(c *x509.Certificate, now time.Time) bool {
	return !now.Before(c.NotBefore) && now.Add(RenewBefore).Before(c.NotAfter)
}

// valid reports whether the pair at certPath and keyPath can be kept: it
// loads, the key is the certificate's, ca signed it, it covers hosts and
// it is fresh.
func valid(certPath, keyPath string, ca *x509.Certificate, hosts []string, now time.Time) bool {
	cert, _, err := load(certPath, keyPath)
	if err != nil || cert.CheckSignatureFrom(ca) != nil || !fresh(cert, now) {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// newCA makes a self-signed CA that signs leaves only.
func newCA(name string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate a key: %w", err)
	}
	tmpl, err := template(name, now, CALifetime)
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	return sign(tmpl, tmpl, key, key)
}

// issue makes l's certificate, signed by ca.
func issue(l leaf, ca *x509.Certificate, caKey crypto.Signer, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate a key: %w", err)
	}
	tmpl, err := template(l.name, now, LeafLifetime)
	if err != nil {
		return nil, nil, err
	}
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if l.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range l.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tmpl, ca, key, caKey)
}

func template(name string, now time.Time, life time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: a serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Tether cluster"}},
		// An hour back, for clocks a little behind this one.
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(life),
	}, nil
}

func sign(tmpl, parent *x509.Certificate, key, parentKey crypto.Signer) (*x509.Certificate, crypto.Signer, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	return cert, key, nil
}
