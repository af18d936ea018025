package soak

import (
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/tether-run/tether/internal/graph"
)

// writerReply is the writer's last reply after n visits of soak-persist
// whose earlier visits had prompts.
func writerReply(n int, prompts []string) string {
	s := fmt.Sprintf("t%d [", n)
	for _, p := range prompts {
		s += p + ";"
	}
	return s + "]"
}

// fanoutFiles is the workspace of soak-fanout after rounds rounds.
func fanoutFiles(rounds int) map[string]string {
	want := map[string]string{}
	var log strings.Builder
	for v := 1; v <= rounds; v++ {
		want[fmt.Sprintf("check-%d.txt", v)] = fmt.Sprintf("c%d\n", v)
		want[fmt.Sprintf("review-%d.txt", v)] = fmt.Sprintf("r%d\n", v)
		fmt.Fprintf(&log, "%d\n", v)
	}
	want["log.txt"] = log.String()
	return want
}

// graphFiles are the soak's graphs.
//
//go:embed graphs/*.yaml
var graphFiles embed.FS

// graphData is what the soak's graphs are filled in with: the fields in
// [[ ]] (text/template), since {{ }} are the graphs' own templates.
type graphData struct {
	// Rounds is how many times the graph's loop goes round.
	Rounds int
	// AskAt is the round after which a person is asked (0: never, where
	// the graph may not ask).
	AskAt int
	// Backend is the CLI of soak-cli's writer.
	Backend string
}

// graphFile parses graphs/NAME.yaml filled in with data.
func graphFile(name string, data graphData) *graph.Graph {
	return parse(name, graphText(name, data))
}

// graphText is graphs/NAME.yaml filled in with data.
func graphText(name string, data graphData) string {
	t, err := template.New(name+".yaml").Delims("[[", "]]").Option("missingkey=error").ParseFS(graphFiles, "graphs/"+name+".yaml")
	if err != nil {
		panic(fmt.Sprintf("soak: graph %s: %v", name, err))
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		panic(fmt.Sprintf("soak: graph %s: %v", name, err))
	}
	return b.String()
}

// parse parses one of the soak's graphs; they are the program's own, so a
// problem is a bug.
func parse(name, src string) *graph.Graph {
	g, err := graph.Parse([]byte(src), name+".yaml")
	if err != nil {
		panic(fmt.Sprintf("soak: graph %s: %v", name, err))
	}
	return g
}
