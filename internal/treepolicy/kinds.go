package treepolicy

import "io/fs"

// Kind names the kind of file a mode is, as every message about a tree
// says it: "file", "directory", "symlink", "fifo", "socket", "device" or
// "special file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// Special reports a kind no tree of Tether's ever holds: anything but a
// file, a directory or a symlink (fifos, sockets, devices). Opening one
// could block or reach outside the tree, so a walk never reads it. Which
// symlinks a tree may hold is the engine's rule: a session holds none, a
// workspace those that stay inside it.
func Special(m fs.FileMode) bool {
	return !m.IsRegular() && !m.IsDir() && m&fs.ModeSymlink == 0
}
