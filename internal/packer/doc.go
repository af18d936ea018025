// Package packer moves one agent CLI session between machines as a single
// archive, and nothing else.
//
// A packer is bound to one live backend.Env (the CLI's state root and the
// working directory it runs in). PackSession archives exactly the files that
// make up one session id under that root; UnpackSession restores an archive
// into the root, placing the files where the CLI will look for them from the
// env's working directory; HasSession answers whether the next run of the CLI
// in that env will find the session. All three compute paths through the same
// layout code, so they cannot disagree.
//
// The package promises, for every archive it is handed:
//
//   - only whitelisted session files are ever written, never anything on the
//     deny list (credentials, settings, databases, backups, telemetry);
//   - nothing is written outside a private staging directory inside the state
//     root until the whole archive has been read and checked, and then the
//     session's parts are renamed into place, the session's main file last;
//   - no existing file is truncated or written through, and no link is
//     followed; links, devices, fifos, unsafe paths, archives over the Limits,
//     foreign headers and corrupt streams are refused with typed errors
//     (ErrLinkEntry, ErrSpecialEntry, ErrUnsafePath, ErrTooLarge,
//     ErrHeaderMismatch, ErrCorrupt, ...), tested with errors.Is.
//
// The archive format and the per-backend layouts are described in
// docs/packers.md.
package packer
