package transcript

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// Lines calls fn for each non-blank line of r (without its line end), in
// order, until r ends, ctx is done or w is Full. A line over
// Limits.MaxLineBytes is skipped with a note, and so is a line fn fails
// on, with fn's error: one damaged line costs that line, not the
// conversation. Lines returns only r's own failure or ctx's.
func Lines(ctx context.Context, r io.Reader, w *Writer, fn func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; !w.Full(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, long, err := readLine(br, &buf, w.lim.MaxLineBytes)
		if err != nil && err != io.EOF {
			return err
		}
		switch line = bytes.TrimSpace(line); {
		case long:
			w.Note(fmt.Sprintf("line %d skipped: it is over %d bytes", n, w.lim.MaxLineBytes))
		case len(line) > 0:
			if ferr := fn(line); ferr != nil {
				w.Note(fmt.Sprintf("line %d skipped: %v", n, ferr))
			}
		}
		if err == io.EOF {
			return nil
		}
	}
	return nil
}

// readLine reads one line into *buf, up to max bytes; a longer line is
// read to its end and dropped (long). err is io.EOF at the end of r.
func readLine(br *bufio.Reader, buf *[]byte, max int) (line []byte, long bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(*buf)+len(chunk) > max+1 { // +1: the newline itself
				long, *buf = true, (*buf)[:0]
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return *buf, long, err
		}
		return *buf, long, nil
	}
}
