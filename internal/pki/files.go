package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// load reads a certificate and its private key and checks that they
// belong together.
func load(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	cert, err := readCert(certPath)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, nil, fmt.Errorf("pki: %s holds no PEM private key", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", keyPath, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("pki: %s: not a signing key", keyPath)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, fmt.Errorf("pki: %s is not the key of %s", keyPath, certPath)
	}
	return cert, key, nil
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("pki: %s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// writer writes the files of Ensure: directories 0700, keys 0600, every
// one owned by owner when set.
type writer struct{ owner *Owner }

func (w writer) dir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	// MkdirAll leaves an existing directory (a volume's root) as it was.
	if err := os.Chmod(path, 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return w.chown(path)
}

func (w writer) chown(path string) error {
	if w.owner == nil {
		return nil
	}
	if err := os.Lchown(path, w.owner.UID, w.owner.GID); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// pair writes a certificate and its key.
func (w writer) pair(certPath, keyPath string, cert *x509.Certificate, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: encode the key of %s: %w", cert.Subject.CommonName, err)
	}
	// The key first: a certificate on disk without its key would be kept
	// by no later run, but a reader in between would fail on it.
	if err := w.file(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return w.file(certPath, encodeCert(cert), 0o644)
}

// file replaces path with b atomically: a temporary file beside it,
// written, synced and renamed over it, so a server that reloads its
// certificates never reads half of one. An identical file is left alone.
func (w writer) file(path string, b []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("pki: %w", err)
		}
		return w.chown(path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	tmp := f.Name()
	err = errors.Join(f.Chmod(mode), w.chown(tmp), write(f, b), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}

func write(f *os.File, b []byte) error {
	_, err := f.Write(b)
	return err
}
