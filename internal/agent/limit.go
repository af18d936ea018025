package agent

import "fmt"

// Limit is one budget a visit counts against (the run's, or its node's):
// its bounds, and what was spent against it before the visit began. The
// worker's model relay refuses the visit's next model call once what was
// spent before and what the visit has spent since cross a bound, so a
// run overshoots a budget by at most the model calls already under way.
type Limit struct {
	// Name says which budget it is, for messages: "the run's budget",
	// "the budget of node writer".
	Name string `json:"name"`
	// MaxTokens and MaxCostUSD bound the spending; zero sets no bound.
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// Spent is what the budget had counted before the visit.
	Spent Usage `json:"spent,omitzero"`
}

// Crossed says how the limit is spent once the visit has used visit on
// top of Spent ("" while it is not): the same rule, and the same words,
// as the workflow's check between visits.
func (l Limit) Crossed(visit Usage) string {
	// Tokens and cost add up apart: a visit's live count may know its
	// tokens (the relay reads them) before its cost (the CLI prices it).
	tokens, cost := l.Spent.Tokens()+visit.Tokens(), l.Spent.CostUSD+visit.CostUSD
	switch {
	case l.MaxTokens > 0 && tokens > l.MaxTokens:
		return fmt.Sprintf("%s is spent: %d tokens used, max_tokens is %d", l.Name, tokens, l.MaxTokens)
	case l.MaxCostUSD > 0 && cost > l.MaxCostUSD:
		return fmt.Sprintf("%s is spent: $%.4f used, max_cost_usd is $%.2f", l.Name, cost, l.MaxCostUSD)
	}
	return ""
}

// Spent says which of limits is spent once the visit has used visit, or
// "" when none is.
func Spent(limits []Limit, visit Usage) string {
	for _, l := range limits {
		if msg := l.Crossed(visit); msg != "" {
			return msg
		}
	}
	return ""
}
