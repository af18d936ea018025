package scripted

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/tether-run/tether/internal/agent"
)

// Fingerprint hashes what defines a scripted conversation: the backend
// name, the model, every script entry (the script is the scripted agent's
// system definition) and the node's settings that would change what a real
// agent sees or may do (permissions, tools, disallowed tools, system
// prompts; not env or timeout). Each field is length-prefixed so no two
// different definitions hash alike. The result is the first 16 bytes of the
// SHA-256, in hex; the prompt, visit and answers are not part of it.
func Fingerprint(model string, script []string, s agent.Settings) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	list := func(l []string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(l)))
		h.Write(n[:])
		for _, s := range l {
			field(s)
		}
	}
	field("tether/scripted/fingerprint/v1")
	field(Name)
	field(model)
	list(script)
	if s.Permissions == "" && s.Tools == nil && s.DisallowedTools == nil && s.SystemPrompt == "" && s.AppendSystemPrompt == "" {
		// A node without settings keeps the fingerprint it had before
		// settings existed; the script's count prefix keeps the two forms
		// apart.
		return hex.EncodeToString(h.Sum(nil)[:16])
	}
	field(s.Permissions)
	list(sorted(s.Tools))
	list(sorted(s.DisallowedTools))
	field(s.SystemPrompt)
	field(s.AppendSystemPrompt)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// sorted is a sorted copy without repeats: tool order means nothing.
func sorted(l []string) []string {
	out := slices.Clone(l)
	slices.Sort(out)
	return slices.Compact(out)
}
