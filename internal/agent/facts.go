package agent

// Names of the agent settings that not every backend can apply, as the
// graph DSL spells them.
const (
	SettingPermissions        = "permissions"
	SettingTools              = "tools"
	SettingDisallowedTools    = "disallowed_tools"
	SettingSystemPrompt       = "system_prompt"
	SettingAppendSystemPrompt = "append_system_prompt"
)

// AllSettings lists every Setting* name.
var AllSettings = []string{SettingPermissions, SettingTools, SettingDisallowedTools, SettingSystemPrompt, SettingAppendSystemPrompt}

// Facts are what Tether knows about a backend without running it. Each
// backend declares its own beside its code (internal/backend/<name>/facts),
// and internal/catalogue composes them, so that graph validation and
// session resolution read them without linking any executor.
type Facts struct {
	Name string
	// Implemented reports whether this build has an executor for it.
	Implemented bool
	// NoCost marks a backend whose CLI reports tokens but no price.
	NoCost bool
	// Persist reports whether the backend can resume a conversation on
	// another machine: it has a packer and a resume flag.
	Persist bool
	// Honours lists the settings (Setting*) the backend applies; a node
	// that sets another one is refused by graph validation. Env and
	// Timeout every backend honours. The backend's tests check that
	// exactly these change what a visit runs with.
	Honours []string
	// Permissions says what each permission level (Permission*) becomes
	// for the backend's CLI: a mode, a sandbox, a tool list.
	Permissions map[string]string
	// Credentials are the CLI's login and account files, as
	// slash-separated patterns in treepolicy's syntax (a name, "prefix*",
	// "*suffix", or a tail of a path such as ".codex/auth.json*"). No
	// session archive and no workspace snapshot ever holds one, whichever
	// backend's tree it turns up in.
	Credentials []string
	// ModelEndpoints are the host:port the CLI reaches its model at when
	// the worker names no endpoint of its own: what a confined visit of
	// an agent node may reach by default (`network: model`).
	ModelEndpoints []string
}
