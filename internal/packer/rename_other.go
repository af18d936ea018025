//go:build !linux

package packer

func renameNoReplace(src, dst string) error { return renameNoReplaceFallback(src, dst) }

func exchange(src, dst string) error { return exchangeFallback(src, dst) }
