package untrusted

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// WriteFile writes data to rel below dir through a temporary file and a
// rename, so that no reader sees half of it. Every step stays below dir
// (an os.Root): a directory on the way that the agent replaced with a
// link out of dir is refused, never written through, and the file at
// rel, whatever the agent put there, is replaced, never written into.
func WriteFile(dir, rel string, data []byte, perm os.FileMode) error {
	return WriteFileFrom(dir, rel, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileFrom is WriteFile of what fill writes.
func WriteFileFrom(dir, rel string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	rel = filepath.ToSlash(rel)
	if err := root.MkdirAll(filepath.FromSlash(path.Dir(rel)), 0o700); err != nil {
		return err
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.FromSlash(path.Join(path.Dir(rel), "."+path.Base(rel)+".tmp-"+hex.EncodeToString(suffix[:])))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return root.Rename(tmp, filepath.FromSlash(rel))
}
