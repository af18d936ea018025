// Command tether-ask-user serves the ask_user MCP tool over stdio; it is the
// same server the worker runs as `tether-worker mcp-ask-user`.
//
//	tether-ask-user --record FILE
package main

import (
	"os"

	"github.com/tether-run/tether/internal/askuser"
)

func main() { os.Exit(askuser.Main(os.Args[1:])) }
