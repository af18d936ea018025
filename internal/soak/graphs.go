package soak

import (
	"embed"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/graph"
)

// persistGraph is a writer and a judge that keep their conversations
// (scripted backend) for rounds rounds; with askAt > 0, a person is asked
// once, after round askAt, and answered with a plain `temporal workflow
// signal`. The
// writer's reply lists every earlier prompt of its conversation, so its
// last reply proves the conversation holds exactly its turns, in order.
func persistGraph(rounds, askAt int) string {
	askNode, askEdges := "", ""
	if askAt > 0 {
		askNode = "\n  - {id: ask, kind: human, question: \"Go on?\"}"
		askEdges = fmt.Sprintf("\n  - {from: judge, to: ask, when: 'output.n == %d'}\n  - {from: ask, to: writer}", askAt)
	}
	return fmt.Sprintf(`
name: soak-persist
start: writer
nodes:
  - id: writer
    kind: agent
    backend: scripted
    session: persist
    max_visits: %[1]d
    prompt: "step {{.visit}}"
    script: ["t{{.Turn}} [{{range .History}}{{.Prompt}};{{end}}]"]
  - id: judge
    kind: agent
    backend: scripted
    session: persist
    max_visits: %[1]d
    prompt: "review {{.visit}}"
    script: ['JSON: {"n": {{.Turn}}}']%[2]s
  - {id: done, kind: end}
edges:
  - {from: writer, to: judge}
  - {from: judge, to: done, when: 'output.n >= %[1]d'}%[3]s
  - {from: judge, to: writer}
`, rounds, askNode, askEdges)
}

// writerReply is the writer's last reply after n visits of persistGraph
// whose earlier visits had prompts.
func writerReply(n int, prompts []string) string {
	s := fmt.Sprintf("t%d [", n)
	for _, p := range prompts {
		s += p + ";"
	}
	return s + "]"
}

// toolGraph edits a workspace rounds times: each visit of edit appends its
// number to log.txt and writes f<visit>.txt, and check reads them back.
func toolGraph(rounds int) string {
	return fmt.Sprintf(`
name: soak-tool
start: edit
nodes:
  - id: edit
    kind: tool
    max_visits: %[1]d
    run: [sh, -c, "echo {{.visit}} >> log.txt && echo v{{.visit}} > f{{.visit}}.txt"]
  - id: check
    kind: tool
    max_visits: %[1]d
    run: [sh, -c, "test -f f{{.visit}}.txt && test -f src/0/file-0.txt && wc -l < log.txt"]
  - {id: done, kind: end}
edges:
  - {from: edit, to: check}
  - {from: check, to: done, when: 'output.exit_code == 0 && visits >= %[1]d'}
  - {from: check, to: edit, when: 'output.exit_code == 0'}
`, rounds)
}

// fanoutGraph is a planner that fans out to a tool and a reviewer which
// meet at a join, rounds times over. Each branch writes a file of its own
// on its line of the workspace (the tool appends to its log too) and the
// join merges them, so after round k the workspace holds check-1..k.txt,
// review-1..k.txt and a log with one line per round.
func fanoutGraph(rounds int) string {
	return fmt.Sprintf(`
name: soak-fanout
start: plan
nodes:
  - id: plan
    kind: agent
    backend: scripted
    fanout: all
    max_visits: %[1]d
    prompt: "plan {{.visit}}"
    script: ["plan {{.Turn}}"]
  - id: check
    kind: tool
    max_visits: %[1]d
    run: [sh, -c, "echo c{{.visit}} > check-{{.visit}}.txt && echo {{.visit}} >> log.txt"]
  - id: review
    kind: agent
    backend: scripted
    max_visits: %[1]d
    prompt: "review {{.visit}}"
    script: ["WRITE: review-{{.Visit}}.txt = r{{.Visit}}\\n\nreviewed"]
  - {id: gather, kind: join, workspace: merge, max_visits: %[1]d}
  - {id: done, kind: end}
edges:
  - {from: plan, to: check}
  - {from: plan, to: review}
  - {from: check, to: gather}
  - {from: review, to: gather}
  - {from: gather, to: done, when: 'visits >= %[1]d'}
  - {from: gather, to: plan}
`, rounds)
}

// fanoutFiles is the workspace of fanoutGraph after rounds rounds.
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

// graphFiles are the soak's graphs that take no parameters.
//
//go:embed graphs/*.yaml
var graphFiles embed.FS

// graphFile parses graphs/NAME.yaml.
func graphFile(name string) *graph.Graph {
	src, err := graphFiles.ReadFile("graphs/" + name + ".yaml")
	if err != nil {
		panic(fmt.Sprintf("soak: graph %s: %v", name, err))
	}
	return parse(name, string(src))
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
