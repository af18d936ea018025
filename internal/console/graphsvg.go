package console

import (
	"fmt"
	"slices"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// svgGraph is a graph laid out for an SVG drawn on the server: nodes in
// rows by their distance from the start, edges as curves (loops back up
// on the right), the path a run took drawn heavier. Only numbers and
// class names are computed here; every text goes through the template.
type svgGraph struct {
	W, H  int
	Nodes []svgNode
	Edges []svgEdge
}

type svgNode struct {
	ID, Sub    string
	X, Y, W, H int
	// TX, TY is where the node's text starts.
	TX, TY int
	Class  string
	Visits int
	URL    string
	// Shape is "rect", "pill" (end), "hex" (join) or "slant" (human).
	Shape  string
	Points string
}

type svgEdge struct {
	D      string
	LX, LY int
	Label  string
	Full   string
	Class  string
	Marker string
}

// taken is what a run did, for the drawing.
type taken struct {
	visits      map[string]int
	transitions []runstore.Transition
	current     []string
	// link makes a node's link (its latest visit), "" for none.
	link func(node string, visit int) string
}

const (
	nodeH   = 46
	rowGap  = 58
	colGap  = 36
	marginX = 24
	marginY = 20
)

// layout places g's nodes and edges.
func layout(g *graph.Graph, t taken) svgGraph {
	order, back := explore(g)
	rank := ranks(g, order, back)
	rows := map[int][]string{}
	maxRank := 0
	for _, id := range order {
		rows[rank[id]] = append(rows[rank[id]], id)
		maxRank = max(maxRank, rank[id])
	}
	width := map[string]int{}
	for _, n := range g.Nodes {
		width[n.ID] = max(110, 8*max(len([]rune(n.ID)), len([]rune(subtitle(n))))+28)
	}
	// Order each row by where its predecessors are, so edges cross less.
	x := map[string]float64{}
	rowW := map[int]int{}
	widest := 0
	for r := 0; r <= maxRank; r++ {
		ids := rows[r]
		if r > 0 {
			bary := map[string]float64{}
			for _, id := range ids {
				sum, n := 0.0, 0
				for _, e := range g.Edges {
					if e.To == id && rank[e.From] < r {
						sum += x[e.From]
						n++
					}
				}
				bary[id] = 1e9
				if n > 0 {
					bary[id] = sum / float64(n)
				}
			}
			slices.SortStableFunc(ids, func(a, b string) int {
				switch {
				case bary[a] < bary[b]:
					return -1
				case bary[a] > bary[b]:
					return 1
				}
				return 0
			})
		}
		w := 0
		for i, id := range ids {
			if i > 0 {
				w += colGap
			}
			w += width[id]
		}
		rowW[r] = w
		widest = max(widest, w)
		cx := 0
		for _, id := range ids {
			x[id] = float64(cx + width[id]/2)
			cx += width[id] + colGap
		}
	}
	// Loops run up a lane right of the widest row, their conditions
	// beside them: the drawing is as wide as the longest of those.
	label := 0
	loops := 0
	for i, e := range g.Edges {
		if back[i] || rank[e.To] <= rank[e.From] {
			loops++
			label = max(label, 7*len([]rune(cut(e.When, 34))))
		}
	}
	out := svgGraph{W: widest + 2*marginX + 12 + loops*10 + label + 16, H: 2*marginY + (maxRank+1)*nodeH + maxRank*rowGap}
	pos := map[string]*svgNode{}
	for r := 0; r <= maxRank; r++ {
		shift := marginX + (widest-rowW[r])/2
		for _, id := range rows[r] {
			n, _ := g.Node(id)
			sn := svgNode{
				ID: id, Sub: subtitle(*n), W: width[id], H: nodeH,
				X: shift + int(x[id]) - width[id]/2, Y: marginY + r*(nodeH+rowGap),
				Visits: t.visits[id], Shape: shape(n.Kind),
			}
			sn.TX, sn.TY = sn.X+sn.W/2, sn.Y+19
			sn.Points = points(sn)
			sn.Class = "node k-" + string(n.Kind)
			if sn.Visits > 0 {
				sn.Class += " visited"
				if t.link != nil {
					sn.URL = t.link(id, sn.Visits)
				}
			}
			if slices.Contains(t.current, id) {
				sn.Class += " current"
			}
			out.Nodes = append(out.Nodes, sn)
		}
	}
	for i := range out.Nodes {
		pos[out.Nodes[i].ID] = &out.Nodes[i]
	}
	// Edges leaving one node start side by side.
	outs := map[string]int{}
	seen := map[string]int{}
	for _, e := range g.Edges {
		outs[e.From]++
	}
	lane := 0
	for i, e := range g.Edges {
		a, b := pos[e.From], pos[e.To]
		if a == nil || b == nil {
			continue
		}
		k := seen[e.From]
		seen[e.From]++
		se := svgEdge{Label: cut(e.When, 34), Full: e.When, Class: "edge", Marker: "url(#arrow)"}
		if slices.Contains(t.transitions, runstore.Transition{From: e.From, To: e.To}) {
			se.Class += " taken"
			se.Marker = "url(#arrow-taken)"
		}
		if from, ok := g.Node(e.From); ok && from.Fanout == graph.FanoutAll {
			se.Class += " fanout"
		}
		switch {
		case back[i] || rank[e.To] <= rank[e.From]:
			// A loop back: out of a's right side, up the lane on the
			// right, into b's right side.
			lane++
			lx := marginX + widest + 12 + lane*10
			y1, y2 := a.Y+a.H/2, b.Y+b.H/2
			x1, x2 := a.X+a.W, b.X+b.W
			if e.From == e.To {
				se.D = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1-8, x1+40, y1-30, x1+40, y1+30, x1, y1+8)
				se.LX, se.LY = x1+44, y1
			} else {
				se.D = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, lx, y1, lx, y2, x2+2, y2)
				se.LX, se.LY = lx+4, (y1+y2)/2
			}
			se.Class += " back"
		default:
			spread := (a.W - 30) / max(outs[e.From], 1)
			x1 := a.X + 15 + spread*k + spread/2
			if outs[e.From] == 1 {
				x1 = a.X + a.W/2
			}
			y1 := a.Y + a.H
			x2, y2 := b.X+b.W/2, b.Y-2
			mid := (y1 + y2) / 2
			se.D = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, x1, mid, x2, mid, x2, y2)
			se.LX, se.LY = (x1+x2)/2+8, mid+4
			se.Class += " fwd"
		}
		out.Edges = append(out.Edges, se)
		if se.Label != "" {
			// A condition is written rightwards from its place: the
			// drawing is wide enough to show it whole.
			out.W = max(out.W, se.LX+7*len([]rune(se.Label))+marginX)
		}
	}
	return out
}

// explore orders the nodes by a depth-first walk from the start (then the
// rest, in file order) and marks the edges that go back to a node still
// on the walk's stack: the loops.
func explore(g *graph.Graph) (order []string, back map[int]bool) {
	back = map[int]bool{}
	state := map[string]int{} // 1 on the stack, 2 done
	var walk func(id string)
	walk = func(id string) {
		state[id] = 1
		order = append(order, id)
		for i, e := range g.Edges {
			if e.From != id {
				continue
			}
			switch state[e.To] {
			case 0:
				if _, ok := g.Node(e.To); ok {
					walk(e.To)
				}
			case 1:
				back[i] = true
			}
		}
		state[id] = 2
	}
	if _, ok := g.Node(g.Start); ok {
		walk(g.Start)
	}
	for _, n := range g.Nodes {
		if state[n.ID] == 0 {
			walk(n.ID)
		}
	}
	return order, back
}

// ranks puts each node one row below the lowest of its predecessors along
// forward edges (the longest path from the start).
func ranks(g *graph.Graph, order []string, back map[int]bool) map[string]int {
	rank := map[string]int{}
	for range g.Nodes { // at most n rounds settle a DAG's longest paths
		changed := false
		for i, e := range g.Edges {
			if back[i] || e.From == e.To {
				continue
			}
			if _, ok := g.Node(e.To); !ok {
				continue
			}
			if r := rank[e.From] + 1; r > rank[e.To] {
				rank[e.To] = r
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for _, id := range order {
		if _, ok := rank[id]; !ok {
			rank[id] = 0
		}
	}
	return rank
}

func subtitle(n graph.Node) string {
	s := string(n.Kind)
	switch n.Kind {
	case graph.KindAgent:
		s = n.Backend
		if n.Session != graph.SessionFresh {
			s += " · " + n.Session.String()
		}
	case graph.KindTool:
		if len(n.Run) > 0 {
			s = "tool · " + cut(n.Run[0], 14)
		}
	case graph.KindJoin:
		s = "join · " + n.Workspace.ModeOrTrunk()
	case graph.KindHuman:
		s = "person"
	case graph.KindReview:
		s = "review · pull request"
	}
	if n.Fanout == graph.FanoutAll {
		s += " · fan-out"
	}
	return s
}

func shape(k graph.Kind) string {
	switch k {
	case graph.KindEnd:
		return "pill"
	case graph.KindJoin:
		return "hex"
	case graph.KindHuman, graph.KindReview:
		return "slant"
	}
	return "rect"
}

// points is the outline of a hexagon (join) or parallelogram (human).
func points(n svgNode) string {
	switch n.Shape {
	case "hex":
		return fmt.Sprintf("%d,%d %d,%d %d,%d %d,%d %d,%d %d,%d",
			n.X+12, n.Y, n.X+n.W-12, n.Y, n.X+n.W, n.Y+n.H/2, n.X+n.W-12, n.Y+n.H, n.X+12, n.Y+n.H, n.X, n.Y+n.H/2)
	case "slant":
		return fmt.Sprintf("%d,%d %d,%d %d,%d %d,%d", n.X+10, n.Y, n.X+n.W, n.Y, n.X+n.W-10, n.Y+n.H, n.X, n.Y+n.H)
	}
	return ""
}
