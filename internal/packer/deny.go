package packer

import "strings"

// The deny list wins over every whitelist: a path with any of these as a
// component is never packed and never unpacked. Names compare
// case-insensitively (macOS volumes usually are).
var (
	deniedNames = map[string]bool{
		".credentials.json": true, // Claude Code OAuth tokens
		".claude.json":      true, // Claude Code account and project state
		"auth.json":         true, // Codex and pi credentials
		"models.json":       true, // pi provider keys
		"settings.json":     true, // Claude Code and pi settings
		"config.toml":       true, // Codex config (providers, keys)
		"installation_id":   true, // Codex machine identity
		"backups":           true, // Claude Code config backups
		"telemetry":         true, // telemetry spools
	}
	deniedPrefixes = []string{
		".claude.json.", // .claude.json.backup.<ts> and friends
	}
	deniedSuffixes = []string{
		".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal",
	}
)

// denied reports whether the slash-separated path p names a denied file or
// lies under a denied directory.
func denied(p string) bool {
	for _, c := range strings.Split(p, "/") {
		c = strings.ToLower(c)
		if deniedNames[c] {
			return true
		}
		for _, s := range deniedPrefixes {
			if strings.HasPrefix(c, s) {
				return true
			}
		}
		for _, s := range deniedSuffixes {
			if strings.HasSuffix(c, s) {
				return true
			}
		}
	}
	return false
}
