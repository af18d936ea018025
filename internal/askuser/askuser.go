// Package askuser is the ask_user tool that Tether serves to agent CLIs over
// MCP (stdio). When an agent calls it, the server appends the questions to a
// record file that the executor named on the command line and answers the
// call with an instruction to end the turn; the executor reads the record
// after the CLI exits and pauses the visit. The human's answer comes back as
// the next user prompt of the same session.
//
// The server is meant to run as a hidden subcommand of the executing binary
// (`tether-worker mcp-ask-user --record FILE`), so that a worker needs no
// second program; tests build the tiny main in cmd/tether-ask-user.
package askuser

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/untrusted"
)

const (
	// Subcommand selects the server in a binary that embeds it.
	Subcommand = "mcp-ask-user"
	// ServerName is the MCP server name executors register; Claude Code then
	// calls the tool mcp__tether__ask_user.
	ServerName = "tether"
	// ToolName is the tool's name on the MCP server.
	ToolName = "ask_user"
)

// ToolResultText is what the tool call returns to the agent: the pending tool
// use is closed by this result, and the answer arrives as the next user
// message when the session is resumed.
const ToolResultText = "Your questions were sent to the user. The user's answer will arrive as the next user message. " +
	"End your turn now: call no more tools and reply with one short line saying you are waiting for the answer."

// Record is what the server wrote for one visit.
type Record struct {
	Questions []agent.Question `json:"questions"`
	// ToolUseIDs holds the tool-use id of each call when the client passed it
	// in the request's _meta; executors prefer the id from the CLI's output.
	ToolUseIDs []string `json:"tool_use_ids,omitempty"`
}

// Input is the tool's argument.
type Input struct {
	Questions []string `json:"questions"`
}

// maxRecordBytes caps the record a visit's questions make.
const maxRecordBytes = 1 << 20

// ReadRecord reads the record at path; it returns nil and no error when the
// agent asked nothing (no file). The record lies where the agent can
// write, so it is read as untrusted: a link, a FIFO or a device in its
// place, or a record over 1 MiB, is agent.ErrUnsafeFile.
func ReadRecord(path string) (*Record, error) {
	b, err := untrusted.ReadFile(filepath.Dir(path), filepath.Base(path), maxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("askuser: read record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("askuser: record %s: %w", path, err)
	}
	if len(r.Questions) == 0 {
		return nil, nil
	}
	return &r, nil
}

// NewServer returns the MCP server whose ask_user tool appends to recordPath.
func NewServer(recordPath string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: "1"}, nil)
	var mu sync.Mutex
	mcp.AddTool(s, &mcp.Tool{
		Name: ToolName,
		Description: "Ask the human user one or more questions and pause until they answer. " +
			"Use it when you need information, a decision or an approval only the user can give. " +
			"After calling it, end your turn: the answer arrives as the next user message.",
		InputSchema: map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"questions"},
			"properties": map[string]any{"questions": map[string]any{
				"type":        "array",
				"items":       map[string]any{"type": "string"},
				"description": "the questions to ask the user, each one self-contained",
			}},
		},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, any, error) {
		var qs []string
		for _, q := range in.Questions {
			if q = strings.TrimSpace(q); q != "" {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			return &mcp.CallToolResult{IsError: true,
				Content: []mcp.Content{&mcp.TextContent{Text: "ask_user needs at least one non-empty question"}}}, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if err := appendRecord(recordPath, qs, toolUseID(req)); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ToolResultText}}}, nil, nil
	})
	return s
}

// toolUseID is the id of the model's tool call when the client passes it in
// _meta (Claude Code does, as "claudecode/toolUseId").
func toolUseID(req *mcp.CallToolRequest) string {
	if req == nil || req.Params == nil {
		return ""
	}
	for k, v := range req.Params.GetMeta() {
		if s, ok := v.(string); ok && strings.HasSuffix(strings.ToLower(k), "tooluseid") {
			return s
		}
	}
	return ""
}

func appendRecord(path string, qs []string, id string) error {
	rec, err := ReadRecord(path)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &Record{}
	}
	for _, q := range qs {
		rec.Questions = append(rec.Questions, agent.Question{ID: fmt.Sprintf("q%d", len(rec.Questions)+1), Text: q})
	}
	if id != "" {
		rec.ToolUseIDs = append(rec.ToolUseIDs, id)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ask-user-*")
	if err != nil {
		return fmt.Errorf("askuser: write record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("askuser: write record: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("askuser: write record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("askuser: write record: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("askuser: write record: %w", err)
	}
	return nil
}

// Main runs the subcommand: args are what follows Subcommand on the command
// line ("--record FILE"). It serves over stdin/stdout and returns an exit code.
func Main(args []string) int {
	fl := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	record := fl.String("record", "", "file the questions are appended to (required)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *record == "" {
		fmt.Fprintln(os.Stderr, Subcommand+": --record FILE is required")
		return 2
	}
	err := NewServer(*record).Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, Subcommand+":", err)
		return 1
	}
	return 0
}

// Command returns the argv that starts the server for one visit: base is the
// executing binary and any leading arguments (for the worker,
// [os.Executable(), Subcommand]).
func Command(base []string, recordPath string) []string {
	return append(append([]string(nil), base...), "--record", recordPath)
}
