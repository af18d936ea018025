// Command tether-ask-user is the ask_user MCP server (internal/askuser)
// built alone: an agent CLI starts it for every visit and waits for its
// tool list before its first model call, and this binary starts in a
// millisecond where tether-worker, which serves the same tool as
// `tether-worker mcp-ask-user`, initialises the whole worker first
// (docs/performance.md, "The ask_user server"). The worker uses it when
// it lies beside the worker's executable.
//
//	tether-ask-user --record FILE
package main

import (
	"os"

	"github.com/tether-run/tether/internal/askuser"
)

func main() { os.Exit(askuser.Main(os.Args[1:])) }
