// Package packer moves one agent CLI session between machines as a single
// archive, and nothing else.
//
// A packer is bound to one live agent.Env (the CLI's state root and the
// working directory it runs in). PackSession archives exactly the files that
// make up one session id under that root; UnpackSession restores an archive
// into the root, placing the files where the CLI will look for them from the
// env's working directory; HasSession answers whether the next run of the CLI
// in that env will find the session. All three compute paths through the same
// Layout, so they cannot disagree.
//
// The packer is the engine; where a backend's session lives is the
// backend's own knowledge. Each backend package implements a Layout (Claude
// Code's in internal/backend/claude, Codex's and pi's beside their
// executors, the scripted agent's as a Files function) and builds its
// packer with New. Whatever a layout says, the packer checks every path,
// link and entry itself.
//
// The package promises, for every archive it is handed:
//
//   - only whitelisted session files are ever written, never anything on the
//     deny list: the credentials and CLI state files (settings, keys,
//     databases, backups, telemetry) of the policy it is given
//     (WithPolicy), which the backends' facts name;
//   - nothing is written outside a private staging directory inside the state
//     root until the whole archive has been read and checked; then every
//     session part is checked against the live root, and only then renamed
//     into place, the session's main file last; a refusal at any point,
//     a cancelled context included, leaves the live root as it was;
//   - no existing file is truncated or written through, and no link is
//     followed; links, devices, fifos, unsafe paths, paths too deep or too
//     long, archives over the Limits, foreign headers and corrupt streams are
//     refused with typed errors (ErrLinkEntry, ErrSpecialEntry,
//     ErrUnsafePath, ErrTooLarge, ErrTooDeep, ErrHeaderMismatch, ErrCorrupt,
//     ...), tested with errors.Is.
//
// Packing refuses hard-linked files (ErrHardLink) and scans every file for
// tokens shaped like API keys: with RedactDetect (the default) it logs where
// and what kind, never the value; with RedactRefuse (WithRedact; the
// worker's TETHER_REDACT=refuse) it fails with ErrSecret.
//
// The archive format and the per-backend layouts are described in
// docs/packers.md.
package packer
