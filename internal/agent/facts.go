package agent

import "strings"

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
	// CLI is the program the backend runs, looked up in the worker's CLI
	// bin directory (TETHER_CLI_BIN) or PATH; empty for one that runs no
	// program.
	CLI string
	// Pin is the variable of the repository's .env that pins the CLI:
	// AGENT_CLI_<X>=<npm package>@<version>. scripts/tools.sh and the
	// worker image install every such line.
	Pin string
	// Wire is the model API the CLI speaks (WireAnthropic, WireResponses,
	// WireChat, WireGemini): what an endpoint in its base URL must answer.
	Wire string
	// MCP marks a CLI whose MCP client can call Tether's ask_user tool;
	// the others ask through the reply convention.
	MCP bool
	// Vars are the worker's environment variables the backend is
	// configured by: internal/config reads them for it, the registry
	// hands them to its constructor, and the docs list them.
	Vars []Var
	// Script marks the backend that reads a node's script (the scripted
	// agent): graph validation warns of a script on any other.
	Script bool
	// Credentials are the CLI's login and account files, as
	// slash-separated patterns in treepolicy's syntax (a name, "prefix*",
	// "*suffix", or a tail of a path such as ".codex/auth.json*"). No
	// session archive and no workspace snapshot ever holds one, whichever
	// backend's tree it turns up in.
	Credentials []string
	// ModelEndpoints are the host:port the CLI reaches its model at when
	// the worker names no endpoint of its own: what a confined visit of
	// an agent node may reach by default (`network: model`) when no model
	// relay carries its calls.
	ModelEndpoints []string
	// ModelURL is the CLI's own model endpoint, as its base URL variable
	// (VarBaseURL) takes it, where the worker's model relay sends the
	// visit's calls when the worker names no endpoint; empty for a CLI
	// whose endpoint Tether does not know, which then gets no key.
	ModelURL string
	// State are the CLI's own state files that a folder of its sessions
	// may hold but no session archive carries (its settings, config,
	// identity, telemetry spools, databases): patterns of one path
	// component in path.Match syntax ("auth.json*", "settings*.json",
	// "backups"), compared in lower case. A path with a component that
	// matches one, or under a directory that does, is never packed and
	// never unpacked, in any backend's archive; a workspace may hold such
	// files.
	State []string
}

// The model APIs a CLI may speak (Facts.Wire).
const (
	WireAnthropic = "messages"         // Anthropic's Messages API: POST <base>/v1/messages
	WireResponses = "responses"        // OpenAI's Responses API: POST <base, with /v1>/responses
	WireChat      = "chat-completions" // OpenAI's Chat Completions: POST <base, with /v1>/chat/completions
	WireGemini    = "generate-content" // the Gemini API: POST <base>/v1beta/models/<model>:generateContent
)

// Var is a worker environment variable a backend reads.
type Var struct {
	Name string
	// Role says what the backend does with it.
	Role VarRole
	// Doc says what it sets, in one line, for the docs' tables.
	Doc string
}

// VarRole is what a backend does with one of its variables.
type VarRole string

// The roles of a backend's variables.
const (
	// VarBaseURL is the model endpoint (cliexec.Options.BaseURL).
	VarBaseURL VarRole = "base_url"
	// VarAPIKey is the endpoint's key (cliexec.Options.APIKey): the
	// worker's model relay holds it and puts it on the CLI's calls to the
	// endpoint; the CLI gets a placeholder of the visit's, and no log line
	// shows the key.
	VarAPIKey VarRole = "api_key"
	// VarModel is the default model (cliexec.Options.Model).
	VarModel VarRole = "model"
	// VarSetting is a default of the backend's own, read by its
	// constructor.
	VarSetting VarRole = "setting"
)

// ModelVar is the name of the variable that holds backend name's default
// model: TETHER_MODEL_ and the name in capitals.
func ModelVar(name string) string { return "TETHER_MODEL_" + strings.ToUpper(name) }

// Var returns the backend's variable of role r (the first, for
// VarSetting), and whether it has one.
func (f Facts) Var(r VarRole) (Var, bool) {
	for _, v := range f.Vars {
		if v.Role == r {
			return v, true
		}
	}
	return Var{}, false
}
