package fakemodel

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// File cues make the model write and edit files through the asking CLI's
// own tools. A cue starts a line and runs to its end marker:
//
//	WRITE_FILE: notes/todo.txt
//	first line
//	second line
//	END_FILE
//
//	EDIT_FILE: main.go
//	OLD:
//	return 1
//	NEW:
//	return 2
//	END_EDIT
//
// WRITE_FILE writes the lines between the header and END_FILE, each ended
// by a newline. EDIT_FILE replaces the OLD block (its lines joined by
// newlines, without a final one) by the NEW block; the OLD text must occur
// once in the file. Paths are relative to the CLI's working directory.
//
// A cue applies on one user turn of the conversation: the turn of the
// prompt it is written in, or turn N when written WRITE_FILE@N: or
// EDIT_FILE@N:. Cues are looked for in every user prompt of the
// conversation, so one first prompt can script later visits of a resumed
// conversation; a conversation that was not really resumed never reaches
// turn 2 and never runs the @2 cues.
//
// The cues of a turn run in order, one tool call per model response; after
// the last tool result the model gives its normal final text. The tools
// are recognised by their names: Claude Code's Read/Write/Edit (each file is
// Read first in the turn, as Claude Code requires before a write), pi's
// read/write/edit, Gemini CLI's write_file/replace, and Codex's apply_patch tool or, when it offers none,
// its exec_command shell tool running apply_patch. A turn whose cues find
// no file tool offered makes no tool call.
const (
	CueWriteFile = "WRITE_FILE"
	CueEditFile  = "EDIT_FILE"
	endFile      = "END_FILE"
	endEdit      = "END_EDIT"
	oldMarker    = "OLD:"
	newMarker    = "NEW:"
)

// fileCue is one WRITE_FILE or EDIT_FILE cue.
type fileCue struct {
	edit     bool
	path     string
	content  string // WRITE_FILE
	old, new string // EDIT_FILE
	turn     int
}

var fileCueRE = regexp.MustCompile(`^(WRITE_FILE|EDIT_FILE)(?:@([0-9]+))?:\s*(\S.*?)\s*$`)

// fileCues parses the file cues of a prompt written on turn.
func fileCues(prompt string, turn int) []fileCue {
	var out []fileCue
	lines := strings.Split(prompt, "\n")
	for i := 0; i < len(lines); i++ {
		m := fileCueRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		c := fileCue{edit: m[1] == CueEditFile, path: m[3], turn: turn}
		if m[2] != "" {
			c.turn, _ = strconv.Atoi(m[2])
		}
		end := endFile
		if c.edit {
			end = endEdit
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != end {
			j++
		}
		if j == len(lines) {
			continue // no end marker: not a cue
		}
		body := lines[i+1 : j]
		i = j
		if !c.edit {
			for _, l := range body {
				c.content += l + "\n"
			}
			out = append(out, c)
			continue
		}
		o, n := -1, -1
		for k, l := range body {
			switch strings.TrimSpace(l) {
			case oldMarker:
				if o < 0 {
					o = k
				}
			case newMarker:
				if o >= 0 && n < 0 {
					n = k
				}
			}
		}
		if o < 0 || n < 0 {
			continue
		}
		c.old = strings.Join(body[o+1:n], "\n")
		c.new = strings.Join(body[n+1:], "\n")
		out = append(out, c)
	}
	return out
}

// toolCall is one tool call the model makes.
type toolCall struct {
	name string
	args string // JSON arguments, or the raw input of a custom tool
	// custom marks a Responses API custom (freeform) tool call.
	custom bool
}

// filePlan is the sequence of tool calls that carries out the file cues
// for the conversation's current turn, with the tools the request offers.
func (c conversation) filePlan() []toolCall {
	n := len(c.prompts)
	var cues []fileCue
	for i, p := range c.prompts {
		for _, fc := range fileCues(p, i+1) {
			if fc.turn == n {
				cues = append(cues, fc)
			}
		}
	}
	if len(cues) == 0 {
		return nil
	}
	has := func(name string) bool {
		for _, t := range c.tools {
			if t == name {
				return true
			}
		}
		return false
	}
	var plan []toolCall
	switch {
	case has("Write") && has("Edit") && has("Read"):
		read := map[string]bool{}
		for _, fc := range cues {
			p := c.abs(fc.path)
			if !read[p] {
				read[p] = true
				plan = append(plan, call("Read", map[string]any{"file_path": p}))
			}
			if fc.edit {
				plan = append(plan, call("Edit", map[string]any{"file_path": p, "old_string": fc.old, "new_string": fc.new}))
			} else {
				plan = append(plan, call("Write", map[string]any{"file_path": p, "content": fc.content}))
			}
		}
	case has("write_file") || has("replace"):
		// Gemini CLI: write_file and replace, with absolute paths.
		for _, fc := range cues {
			switch p := c.abs(fc.path); {
			case fc.edit && has("replace"):
				plan = append(plan, call("replace", map[string]any{"file_path": p, "old_string": fc.old, "new_string": fc.new,
					"instruction": "apply the requested edit"}))
			case !fc.edit && has("write_file"):
				plan = append(plan, call("write_file", map[string]any{"file_path": p, "content": fc.content}))
			}
		}
	case has("todowrite") && (has("write") || has("edit")):
		// opencode: write and edit take filePath (relative to its working
		// directory), and edit needs the file read first in the session.
		read := map[string]bool{}
		for _, fc := range cues {
			switch {
			case fc.edit && has("edit"):
				if !read[fc.path] && has("read") {
					read[fc.path] = true
					plan = append(plan, call("read", map[string]any{"filePath": fc.path}))
				}
				plan = append(plan, call("edit", map[string]any{"filePath": fc.path, "oldString": fc.old, "newString": fc.new}))
			case !fc.edit && has("write"):
				plan = append(plan, call("write", map[string]any{"filePath": fc.path, "content": fc.content}))
			}
		}
	case has("write") || has("edit"):
		for _, fc := range cues {
			switch {
			case fc.edit && has("edit"):
				plan = append(plan, call("edit", map[string]any{"path": fc.path,
					"edits": []any{map[string]any{"oldText": fc.old, "newText": fc.new}}}))
			case !fc.edit && has("write"):
				plan = append(plan, call("write", map[string]any{"path": fc.path, "content": fc.content}))
			}
		}
	case has("create_file") && has("str_replace_editor"):
		// grok: paths relative to its working directory.
		for _, fc := range cues {
			if fc.edit {
				plan = append(plan, call("str_replace_editor", map[string]any{"path": fc.path, "old_str": fc.old, "new_str": fc.new}))
			} else {
				plan = append(plan, call("create_file", map[string]any{"path": fc.path, "content": fc.content}))
			}
		}
	case has("apply_patch"):
		for _, fc := range cues {
			patch := applyPatch(fc)
			if c.customTools["apply_patch"] {
				plan = append(plan, toolCall{name: "apply_patch", args: patch, custom: true})
			} else {
				plan = append(plan, call("apply_patch", map[string]any{"input": patch}))
			}
		}
	case has("exec_command"):
		for _, fc := range cues {
			plan = append(plan, call("exec_command", map[string]any{"cmd": heredoc("apply_patch", applyPatch(fc))}))
		}
	}
	return plan
}

func call(name string, args map[string]any) toolCall {
	b, _ := json.Marshal(args)
	return toolCall{name: name, args: string(b)}
}

// abs makes p absolute against the CLI's working directory when the request
// says what it is (Claude Code's file tools take absolute paths only).
func (c conversation) abs(p string) string {
	if path.IsAbs(p) || c.cwd == "" {
		return p
	}
	return path.Join(c.cwd, p)
}

// applyPatch writes a cue as a Codex apply_patch patch: a whole-file write
// deletes nothing and adds the file (apply_patch overwrites an existing
// one), an edit replaces the OLD lines by the NEW ones.
func applyPatch(fc fileCue) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	if fc.edit {
		fmt.Fprintf(&b, "*** Update File: %s\n@@\n", fc.path)
		for _, l := range strings.Split(fc.old, "\n") {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range strings.Split(fc.new, "\n") {
			b.WriteString("+" + l + "\n")
		}
	} else {
		fmt.Fprintf(&b, "*** Add File: %s\n", fc.path)
		for _, l := range strings.Split(strings.TrimSuffix(fc.content, "\n"), "\n") {
			b.WriteString("+" + l + "\n")
		}
	}
	b.WriteString("*** End Patch")
	return b.String()
}

// heredoc is a shell command that runs cmd with body on its stdin.
func heredoc(cmd, body string) string {
	tag := "TETHER_EOF"
	for strings.Contains(body, tag) {
		tag += "_"
	}
	return fmt.Sprintf("%s <<'%s'\n%s\n%s", cmd, tag, body, tag)
}

var cwdREs = []*regexp.Regexp{
	regexp.MustCompile(`Primary working directory: (\S+)`),
	regexp.MustCompile(`<cwd>([^<]+)</cwd>`),
	regexp.MustCompile(`Current working directory: (\S+)`),
	regexp.MustCompile(`\*\*Workspace Directories:\*\*\s*\n\s*- (\S+)`),
}

// findCwd returns the working directory a CLI told the model about in text,
// or "".
func findCwd(text string) string {
	for _, re := range cwdREs {
		if m := re.FindStringSubmatch(text); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}
