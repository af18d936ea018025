package agent

// Reserved output and input keys. Stamps are set on every agent output;
// SessionStateBlobKey is a transient carrier that is stripped before an
// output is stored anywhere.
const (
	SessionIDKey          = "_session_id"
	BackendKey            = "_backend"
	SessionFingerprintKey = "_session_fingerprint"
	SessionStateKey       = "_session_state"
	SessionStateBlobKey   = "_session_state_blob"
	// UsageKey is the key under which a visit's Usage rides on the agent's
	// output map (as the JSON of Usage). Like every key starting with "_",
	// it never travels along an edge unless a mapping names it.
	UsageKey = "_usage"
)
