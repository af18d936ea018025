// Package archive reads Tether's session archives: the format (a clear
// header, then one zstd frame holding a tar stream), the digest a
// checkpoint records for each blob, and the assembly of a whole archive
// with the incremental parts packed after it into the session's files,
// each link of the chain checked as its bytes pass.
//
// It is the read side of internal/packer, kept apart so that a program
// that only shows sessions (the console inside `tether`) reads them with
// the same checks as a worker restoring one, without linking the packer's
// engine that writes session roots. It touches no file system: every
// entry it hands out is a stream, and a caller that writes one (the
// packer) applies its own layout and placement rules.
//
// Everything it reads is untrusted: sizes are capped before anything is
// decompressed or held, links and special entries are refused, and every
// failure is a typed error (ErrCorrupt, ErrTooLarge, ErrBrokenChain, …)
// tested with errors.Is.
package archive
