package activities

import "strings"

// GuidanceIntro precedes, after a visit's prompt, the notes people sent
// its node while the run went on (`tether guide`, the console).
const GuidanceIntro = "Guidance from a person watching this run; follow it in this turn:"

// guidanceText is the part of a prompt that carries notes ("" for none).
func guidanceText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n" + GuidanceIntro)
	for _, n := range notes {
		b.WriteString("\n- " + strings.ReplaceAll(strings.TrimSpace(n), "\n", "\n  "))
	}
	return b.String()
}
