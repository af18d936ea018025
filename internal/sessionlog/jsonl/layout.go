package jsonl

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// NoCwdBucket holds the sessions whose header has no cwd.
const NoCwdBucket = "_no-cwd"

// Ext is the file name extension of a session log.
const Ext = ".jsonl"

const maxSlug = 64

// Bucket names the directory that holds the logs of sessions in cwd: the
// cwd with every byte other than a letter or digit replaced by '-' (leading
// dashes dropped, cut to 64 characters) for people, then 12 hex digits of
// the SHA-256 of the full cwd so that distinct cwds never share a bucket.
// An empty cwd is NoCwdBucket.
func Bucket(cwd string) string {
	if cwd == "" {
		return NoCwdBucket
	}
	var b strings.Builder
	for i := 0; i < len(cwd) && b.Len() < maxSlug; i++ {
		c := cwd[i]
		if isAlnum(c) {
			b.WriteByte(c)
		} else if b.Len() > 0 {
			b.WriteByte('-')
		}
	}
	slug := strings.TrimRight(b.String(), "-")
	if slug == "" {
		slug = "cwd"
	}
	sum := sha256.Sum256([]byte(cwd))
	return slug + "-" + hex.EncodeToString(sum[:6])
}

// ValidBucket reports whether name could be a bucket Bucket returns. It is
// what an archive reader checks before it creates a directory.
func ValidBucket(name string) bool {
	if name == NoCwdBucket {
		return true
	}
	slug, hash, ok := cut(name)
	if !ok || len(hash) != 12 || slug == "" || len(slug) > maxSlug || !isAlnum(slug[0]) {
		return false
	}
	for i := 0; i < len(slug); i++ {
		if !isAlnum(slug[i]) && slug[i] != '-' {
			return false
		}
	}
	for i := 0; i < len(hash); i++ {
		if !(hash[i] >= '0' && hash[i] <= '9' || hash[i] >= 'a' && hash[i] <= 'f') {
			return false
		}
	}
	return true
}

func cut(name string) (slug, hash string, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// RelPath is where the log of session id in cwd lives, relative to the
// store's root: <bucket>/<id>.jsonl.
func RelPath(cwd, id string) string {
	return filepath.Join(Bucket(cwd), id+Ext)
}
