package runapi

import "go.temporal.io/sdk/temporal"

// Search attributes a run keeps up to date, so `temporal workflow list
// --query 'TetherStatus="waiting"'` and the Web UI find runs by graph,
// node, status and backend.
var (
	SearchGraph    = temporal.NewSearchAttributeKeyKeyword("TetherGraph")
	SearchNode     = temporal.NewSearchAttributeKeyKeyword("TetherNode")
	SearchStatus   = temporal.NewSearchAttributeKeyKeyword("TetherStatus")
	SearchBackends = temporal.NewSearchAttributeKeyKeywordList("TetherBackends")
	// SearchThread lists the GitHub issue and pull request a run started
	// from and opened ("owner/name#12"), so a comment finds its runs.
	SearchThread = temporal.NewSearchAttributeKeyKeywordList("TetherThread")
)
