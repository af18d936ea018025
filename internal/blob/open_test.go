package blob_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/blob"
)

func TestOpenURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key := strings.Repeat("ab", 32)
	for _, c := range []struct {
		url, env, wantErr string
	}{
		{url: "file://" + dir},
		{url: "file://" + filepath.Join(dir, "new", "sub")},
		{url: "mem://"},
		{url: "mem://shared"},
		{url: "s3://bucket/some/prefix?endpoint=http://127.0.0.1:1&region=us-east-1&path_style=true"},
		{url: "s3://bucket?region=eu-west-1&part_size_mib=16"},
		{url: "file://" + dir + "?encrypt=true", env: key},
		{url: "mem://?encrypt=true", env: base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{url: "mem://?encrypt=true", wantErr: "no key was given; set TETHER_BLOB_KEY"},
		{url: "mem://?encrypt=maybe", wantErr: "not a boolean"},
		{url: "file://relative/dir", wantErr: "three slashes"},
		{url: "file:///" + "?x=1", wantErr: "unknown parameter"},
		{url: "s3://bucket?endpont=http://x", wantErr: `unknown parameter "endpont"`},
		{url: "s3://key:secret@bucket/p", wantErr: "credentials do not belong in the URL"},
		{url: "s3://bucket/p?part_size_mib=1", wantErr: "minimum"},
		{url: "s3:///p?region=x", wantErr: "no bucket"},
		{url: "s3://bucket/bad//prefix?region=x", wantErr: "invalid key"},
		{url: "gs://bucket", wantErr: "unknown scheme"},
	} {
		t.Run(c.url, func(t *testing.T) {
			var opts []blob.OpenOption
			if c.env != "" {
				key, err := blob.ParseKey(c.env)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, blob.WithEncryptionKey(key))
			}
			s, err := blob.Open(ctx, c.url, opts...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Open = %v, want an error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			s.Close()
		})
	}
}

func TestOpenEncryptedRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	enc, err := blob.Open(ctx, "file://"+dir+"?encrypt=true", blob.WithEncryptionKey(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	if err := blob.PutBytes(ctx, enc, "a/b", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	plain, err := blob.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := blob.GetBytes(ctx, plain, "a/b")
	if err != nil || strings.Contains(string(raw), "hello") {
		t.Fatalf("stored bytes %q, %v: want ciphertext", raw, err)
	}
	got, err := blob.GetBytes(ctx, enc, "a/b")
	if err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}

func TestMemNamedShared(t *testing.T) {
	ctx := context.Background()
	a, _ := blob.Open(ctx, "mem://shared-test")
	b, _ := blob.Open(ctx, "mem://shared-test")
	c, _ := blob.Open(ctx, "mem://")
	if err := blob.PutBytes(ctx, a, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, err := blob.GetBytes(ctx, b, "k"); err != nil || string(got) != "v" {
		t.Fatalf("named store not shared: %q, %v", got, err)
	}
	if _, err := blob.GetBytes(ctx, c, "k"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("mem:// is not fresh: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	for _, s := range []string{
		hex.EncodeToString(raw),
		strings.ToUpper(hex.EncodeToString(raw)),
		base64.StdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		" " + hex.EncodeToString(raw) + "\n",
	} {
		k, err := blob.ParseKey(s)
		if err != nil || string(k) != string(raw) {
			t.Errorf("ParseKey(%q) = %x, %v", s, k, err)
		}
	}
	for _, s := range []string{"", "abc", hex.EncodeToString(raw[:31]), base64.StdEncoding.EncodeToString(raw[:16])} {
		if _, err := blob.ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
	if _, err := blob.Encrypted(blob.NewMem(), raw[:16]); err == nil {
		t.Error("Encrypted accepted a 16-byte key")
	}
}
