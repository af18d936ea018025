package packer

import (
	"path"
	"strings"

	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/treepolicy"
)

// stateDenied are the CLIs' own state files, which a session folder may
// hold but an archive never carries. Credentials are the policy's
// (catalogue.Policy: treepolicy's base rules and every backend's login
// files), the same list a workspace snapshot follows; these
// patterns are only the session-state extras. A path with a component
// matching one (path.Match, compared in lower case, since macOS volumes
// usually ignore case) is never packed and never unpacked.
var stateDenied = []string{
	"auth.json*",      // Codex and pi credentials, wherever a layout puts them
	"models.json*",    // pi provider keys
	"settings*.json",  // Claude Code and pi settings (settings.local.json too)
	"config.toml",     // Codex config (providers, keys)
	"installation_id", // Codex machine identity
	"backups",         // Claude Code config backups
	"telemetry",       // telemetry spools
	"*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite-journal",
	// Public halves of keys too: a session folder has no use for them,
	// though a workspace may.
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
}

// denied reports whether the slash-separated path p names a credential
// or a denied state file, or lies under a denied directory.
func denied(p string) bool {
	if c, _ := catalogue.Policy().Classify(p); c != treepolicy.Plain {
		return true
	}
	for _, c := range strings.Split(p, "/") {
		c = strings.ToLower(c)
		for _, pat := range stateDenied {
			if ok, _ := path.Match(pat, c); ok {
				return true
			}
		}
	}
	return false
}
