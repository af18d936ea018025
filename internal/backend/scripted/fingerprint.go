package scripted

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/tether-run/tether/internal/backend"
)

// Fingerprint hashes what defines a scripted conversation: the backend
// name, the model and every script entry (the script is the scripted
// agent's system definition). Each field is length-prefixed so no two
// different definitions hash alike. The result is the first 16 bytes of the
// SHA-256, in hex; the prompt, visit and answers are not part of it.
func Fingerprint(model string, script []string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("tether/scripted/fingerprint/v1")
	field(backend.Scripted)
	field(model)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(script)))
	h.Write(n[:])
	for _, s := range script {
		field(s)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
