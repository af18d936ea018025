package cliexec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/tether-run/tether/internal/packer"
)

// FilesIn is the Find of a packer.OneFile layout whose CLI keeps its
// sessions in the one directory dir below the state root: dir's entries,
// none while dir does not exist.
func FilesIn(dir string) func(root *os.Root, _ string) ([]string, error) {
	return func(root *os.Root, _ string) ([]string, error) {
		ents, err := packer.ReadDir(root, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		var out []string
		for _, e := range ents {
			out = append(out, path.Join(dir, e.Name()))
		}
		return out, err
	}
}

// MaxHeaderLine bounds the first line of a session file that an executor
// reads for what it says of the session (its id, its working directory).
const MaxHeaderLine = 1 << 20

// HeaderLine reads the first line of a session file from r, its newline
// included, refusing one over MaxHeaderLine bytes. At the end of r it
// returns what there was; an empty r gives io.EOF.
func HeaderLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case len(line) > MaxHeaderLine:
			return nil, fmt.Errorf("its first line is over %d bytes", MaxHeaderLine)
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		case err != nil:
			return nil, err
		}
		return line, nil
	}
}
