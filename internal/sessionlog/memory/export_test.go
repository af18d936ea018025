package memory

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/tether-run/tether/internal/sessionlog"
)

// Intercept installs before as st's test hook (see Store.before); st must
// be a *Store.
func Intercept(st sessionlog.Storage, before func(op string) error) {
	st.(*Store).before = before
}

// PutRaw stores a log of id with exactly these records.
func (s *Store) PutRaw(id string, header []byte, events [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[id] = &record{header: header, lines: events}
}

// Snapshot is every record of every log, in a fixed order.
func (s *Store) Snapshot() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.logs))
	for id := range s.logs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b bytes.Buffer
	for _, id := range ids {
		r := s.logs[id]
		fmt.Fprintf(&b, "%s\n%s\n", id, r.header)
		for _, l := range r.lines {
			fmt.Fprintf(&b, "%s\n", l)
		}
		for _, l := range r.torn {
			fmt.Fprintf(&b, "torn %s\n", l)
		}
	}
	return b.Bytes()
}
