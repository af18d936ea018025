//go:build !unix

package packer

import "io/fs"

// linkCount cannot see hard links here; every file counts as its own.
func linkCount(fs.FileInfo) uint64 { return 1 }
