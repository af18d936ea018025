package packer

import (
	"path"
	"strings"
)

// deniedPatterns win over every whitelist: a path with a component
// matching one of them (path.Match, compared in lower case, since macOS
// volumes usually ignore case) is never packed and never unpacked.
var deniedPatterns = []string{
	".credentials.json*", // Claude Code OAuth tokens, and copies of them
	".claude.json*",      // Claude Code account and project state, its backups
	"auth.json*",         // Codex and pi credentials
	"models.json*",       // pi provider keys
	"settings*.json",     // Claude Code and pi settings (settings.local.json too)
	"config.toml",        // Codex config (providers, keys)
	"installation_id",    // Codex machine identity
	"backups",            // Claude Code config backups
	"telemetry",          // telemetry spools
	"*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite-journal",
	// Secrets a tool may have copied into a session folder.
	".env", "*.env",
	"id_rsa*", "id_ecdsa*", "id_ed25519*",
	"*.pem", "*.key",
}

// denied reports whether the slash-separated path p names a denied file or
// lies under a denied directory.
func denied(p string) bool {
	for _, c := range strings.Split(p, "/") {
		c = strings.ToLower(c)
		for _, pat := range deniedPatterns {
			if ok, _ := path.Match(pat, c); ok {
				return true
			}
		}
	}
	return false
}
