package fakemodel

import "strings"

// CueShell makes the model run the rest of the line as a shell command
// through the asking CLI's own shell tool: Claude Code's Bash, pi's bash,
// Gemini CLI's run_shell_command, Codex's exec_command (or its older shell
// tool). Each cue line of the
// latest prompt is one tool call, in order, after the turn's file cues;
// each command's output comes back to the server as a tool result, which
// Request.ToolResult and Request.Body show, so a test can tell what the
// agent could read. A turn whose request offers no shell tool makes no
// call.
const CueShell = "RUN_SHELL:"

// shellPlan is the tool calls that run the latest prompt's shell cues.
func (c conversation) shellPlan() []toolCall {
	n := len(c.prompts)
	if n == 0 {
		return nil
	}
	var cmds []string
	for _, line := range strings.Split(c.prompts[n-1], "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), CueShell); ok && strings.TrimSpace(cmd) != "" {
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	var plan []toolCall
	for _, cmd := range cmds {
		switch {
		case c.offers("Bash"):
			plan = append(plan, call("Bash", map[string]any{"command": cmd, "description": "run a command"}))
		case c.offers("bash"):
			plan = append(plan, call("bash", map[string]any{"command": cmd}))
		case c.offers("run_shell_command"):
			plan = append(plan, call("run_shell_command", map[string]any{"command": cmd, "description": "run a command"}))
		case c.offers("exec_command"):
			plan = append(plan, call("exec_command", map[string]any{"cmd": cmd}))
		case c.offers("shell"):
			plan = append(plan, call("shell", map[string]any{"command": []string{"bash", "-lc", cmd}}))
		}
	}
	return plan
}

func (c conversation) offers(name string) bool {
	for _, t := range c.tools {
		if t == name {
			return true
		}
	}
	return false
}
