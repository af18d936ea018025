// Package workspace makes a run's working directory durable: the files its
// agent and tool nodes write travel between workers with the run, the way
// session: persist moves a conversation.
//
// A workspace is a directory on a worker plus the run's own git history.
// After a visit that changed the directory, Snapshot records it as one
// commit ("writer visit 3", author Tether) and ships only the objects that
// commit added, as one pack, to the blob store; before a visit, Restore
// makes the directory equal to a given commit, reusing what the worker
// already holds. The packs are git's pack format without deltas, so a
// snapshot's cost follows the size of the change, not of the directory,
// and `tether workspace export` hands a person a real git repository.
//
// The package promises:
//
//   - a snapshot never holds a .git directory, a symlink that leaves the
//     workspace, a special file (fifo, socket, device), a CLI login file,
//     or a file with hard links outside the workspace; files a .gitignore
//     ignores are left out as git would;
//   - a credential-shaped file (internal/treepolicy, the packer's policy
//     too) or a changed file the secret scanner flags is kept only when
//     the run's source tracked it; otherwise it is left out, logged and
//     noted (WithRedact(RedactRefuse): ErrSecret);
//   - files are read through directory descriptors, never following a
//     link, and only if still the inode the walk listed;
//   - a worker's memory and open files stay bounded over any number of
//     runs, and every loop over a pack's bytes honours its context;
//   - limits on files, bytes, one file's size, path depth and path length
//     are enforced on both sides, with typed errors (ErrTooLarge);
//   - Restore checks a whole snapshot (pack format, object sizes, paths,
//     modes, link targets, limits) before it writes a byte, refuses a
//     hostile one with a typed error and leaves the directory as it was;
//     then it writes through os.Root, never through a link, replacing
//     files by atomic renames, up to 8 files at once with at most 64 MiB
//     of their contents in memory;
//   - a pack downloaded from the store must hash to the digest its key
//     names (ErrDigestMismatch), and only non-delta objects are accepted.
//
// Branches of a fan-out each keep their own line of commits, starting at
// the trunk's commit at the fan-out, and their own state, whose packs are
// the trunk's plus the branch's. At the join, Merge restores the trunk and
// applies each branch in order as a three-way merge against it (a file
// both changed goes through `git merge-file`, run with an environment of
// its own, never the worker's), records the collisions as Conflicts with
// git's markers in the file, and snapshots the result as one commit whose
// parents are the trunk and the branch heads, and whose packs are every
// branch's too (UnionPacks). HistoryWithBranches writes branch heads as
// refs; Load and Stat compare the branches' commits before the join.
//
// docs/workspaces.md describes the design and its numbers.
package workspace
