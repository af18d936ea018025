package graph

import "fmt"

// Source records where the parts of a parsed graph were written. Paths name
// a value the way a reader would point at it: "start", "nodes[2]",
// "nodes[2].when", "edges[0].with.feedback". A graph built in code has no
// Source, and every position it reports is the zero Pos.
type Source struct {
	// File is the name the graph was parsed from, as given to Parse.
	File string
	pos  map[string]Pos
}

func newSource(file string) *Source {
	return &Source{File: file, pos: map[string]Pos{}}
}

// At returns where the value at path was written, or the zero Pos.
func (s *Source) At(path string) Pos {
	if s == nil {
		return Pos{}
	}
	return s.pos[path]
}

// Has reports whether the value at path was written in the file.
func (s *Source) Has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.pos[path]
	return ok
}

func (s *Source) set(path string, p Pos) { s.pos[path] = p }

func (s *Source) file() string {
	if s == nil {
		return ""
	}
	return s.File
}

// IsZero reports whether p carries no position.
func (p Pos) IsZero() bool { return p.Line == 0 && p.Column == 0 }

func nodePath(i int) string { return fmt.Sprintf("nodes[%d]", i) }
func edgePath(i int) string { return fmt.Sprintf("edges[%d]", i) }
