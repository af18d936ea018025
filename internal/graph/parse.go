package graph

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// ParseFile reads and parses the graph file at path.
func ParseFile(path string) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("graph: read %s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse decodes a graph file. filename is only used in positions and
// messages. Every node and edge gets its Pos, and g.Source records where
// each field value was written. A file that cannot be read into a Graph
// yields a *ParseError listing every such problem with its position: YAML
// syntax, unknown keys, duplicate keys, values of the wrong type. Parse
// does not check that the graph makes sense; Validate does.
func Parse(data []byte, filename string) (*Graph, error) {
	g := &Graph{}
	src, err := decode(data, filename, g, graphDocument)
	if err != nil {
		return nil, err
	}
	g.Source = src
	return g, nil
}

// DocumentKind is a kind of YAML file that Decode reads the way Parse
// reads a graph (every unknown or malformed field at once, with its
// position): its name and shape for messages, and its own codes for the
// reading problems G001-G005.
type DocumentKind struct {
	// Name is "graph", "triggers file", …; Shape says what one holds.
	Name, Shape string
	Codes       map[string]string
}

var graphDocument = DocumentKind{Name: "graph", Shape: "a YAML mapping with start, nodes and edges (see examples/)"}

// Decode reads the one YAML document of data into the struct v points to.
// A *ParseError lists its reading problems under kind's codes; the Source
// says where each value was written.
func Decode(data []byte, filename string, v any, kind DocumentKind) (*Source, error) {
	return decode(data, filename, v, kind)
}

func decode(data []byte, filename string, v any, kind DocumentKind) (*Source, error) {
	d := &decoder{src: newSource(filename), anchors: map[string]ast.Node{}, codes: kind.Codes}
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey()) // duplicates are reported below, all at once
	if err != nil {
		d.add(CodeSyntax, yamlErrorPos(err), "", "%s; fix the YAML (indentation, quoting, a missing colon) and try again", yamlErrorMessage(err))
		return nil, d.err()
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc.Body)
		}
	}
	switch {
	case len(docs) == 0:
		d.add(CodeNotAGraph, Pos{Line: 1, Column: 1}, "", "the file is empty; a %s is %s", kind.Name, kind.Shape)
		return nil, d.err()
	case len(docs) > 1:
		d.add(CodeNotAGraph, posOf(docs[1]), "", "the file holds %d YAML documents; a %s file holds exactly one, so remove the extra '---' sections", len(docs), kind.Name)
		return nil, d.err()
	}
	body := docs[0]
	ast.Walk(d, body)
	d.src.set("", posOf(body))

	d.decodeStruct(body, "", "the "+kind.Name, reflect.ValueOf(v).Elem())
	if len(d.probs) > 0 {
		return nil, d.err()
	}
	return d.src, nil
}

// decoder walks the YAML tree itself rather than handing the whole document
// to the YAML library, so that it can report every unknown or malformed
// field at once and remember where each value was written.
type decoder struct {
	src     *Source
	probs   Problems
	anchors map[string]ast.Node
	// codes renames the reading codes (G001-G005) for a document of
	// another kind (Decode); nil keeps them.
	codes map[string]string
}

// Visit collects anchors, so that aliases can be resolved wherever they are
// used. It implements ast.Visitor.
func (d *decoder) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		d.anchors[a.Name.GetToken().Value] = a.Value
	}
	return d
}

func (d *decoder) add(code string, pos Pos, node string, format string, args ...any) {
	sev := severityOf(code)
	if c, ok := d.codes[code]; ok {
		code = c
	}
	d.probs = append(d.probs, Problem{
		Code:     code,
		Severity: sev,
		File:     d.src.File,
		Pos:      pos,
		Node:     node,
		Message:  fmt.Sprintf(format, args...),
	})
}

func (d *decoder) err() error {
	d.probs.sortByPos()
	return &ParseError{File: d.src.File, Problems: d.probs}
}

// resolve looks through anchors, aliases and tags to the node that holds
// the value.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range 32 { // an alias chain longer than this is a cycle
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			target, ok := d.anchors[v.Value.GetToken().Value]
			if !ok {
				return n
			}
			n = target
		case *ast.TagNode:
			if _, ok := v.Value.(*ast.MappingNode); !ok {
				if _, ok := v.Value.(*ast.SequenceNode); !ok {
					return n // a scalar's tag matters to its decoding
				}
			}
			n = v.Value
		default:
			return n
		}
	}
	return n
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

// pairs returns the key/value pairs of a mapping, with merge keys (<<)
// expanded: keys written in the mapping itself win over merged ones.
func (d *decoder) pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	n = d.resolve(n)
	var raw []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		raw = v.Values
	case *ast.MappingValueNode:
		raw = []*ast.MappingValueNode{v}
	default:
		return nil, isNull(n)
	}
	var own, merged []*ast.MappingValueNode
	for _, p := range raw {
		if _, ok := p.Key.(*ast.MergeKeyNode); !ok {
			own = append(own, p)
			continue
		}
		sources := []ast.Node{p.Value}
		if seq, ok := d.resolve(p.Value).(*ast.SequenceNode); ok {
			sources = seq.Values
		}
		for _, s := range sources {
			ps, ok := d.pairs(s)
			if !ok {
				d.add(CodeBadValue, posOf(p.Value), "", "a merge key (<<) must name a mapping, e.g. <<: *defaults")
				continue
			}
			merged = append(merged, ps...)
		}
	}
	seen := map[string]bool{}
	for _, p := range own {
		seen[keyOf(p)] = true
	}
	for _, p := range merged {
		if k := keyOf(p); !seen[k] {
			seen[k] = true
			own = append(own, p)
		}
	}
	return own, true
}

func keyOf(p *ast.MappingValueNode) string {
	if p.Key == nil {
		return ""
	}
	if s, ok := p.Key.(*ast.StringNode); ok {
		return s.Value
	}
	return p.Key.GetToken().Value
}

// field is one decodable field of a struct: its YAML name and index.
type field struct {
	name  string
	index int
}

func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, field{name: name, index: i})
	}
	return out
}

var posType = reflect.TypeFor[Pos]()

// decodeStruct fills the struct v from the mapping n. path is the Source
// path of n; what names it in messages ("node writer").
func (d *decoder) decodeStruct(n ast.Node, path, what string, v reflect.Value) {
	ps, ok := d.pairs(n)
	if !ok {
		d.add(CodeBadValue, posOf(n), "", "%s must be a mapping of key: value lines, not %s", what, describe(d.resolve(n)))
		return
	}
	if path != "" {
		d.src.set(path, posOf(n))
	}
	fields := fieldsOf(v.Type())
	byName := map[string]field{}
	var names []string
	for _, f := range fields {
		byName[f.name] = f
		names = append(names, f.name)
	}
	nodeID := ""
	if v.Type() == reflect.TypeFor[Node]() {
		nodeID = d.scalarString(ps, "id")
	}
	seen := map[string]*ast.MappingValueNode{}
	for _, p := range ps {
		key := keyOf(p)
		keyPos := posOf(p.Key)
		if first, dup := seen[key]; dup {
			d.add(CodeDuplicateKey, keyPos, nodeID, "%s sets %q twice (first at line %d); keep one of them", what, key, posOf(first.Key).Line)
			continue
		}
		seen[key] = p
		f, known := byName[key]
		if !known {
			hint := ""
			if s := closest(key, names); s != "" {
				hint = fmt.Sprintf("did you mean %q? ", s)
			} else if v.Type() == reflect.TypeFor[JoinWorkspace]() {
				hint = fmt.Sprintf("a join's workspace is one of %s; ", joinForms)
			} else if v.Type() == reflect.TypeFor[networkAllowForm]() {
				hint = fmt.Sprintf("a node's network is %s; ", networkForms)
			} else if other := misplaced(v.Type(), key); other != "" {
				hint = fmt.Sprintf("%q is a field of %s; ", key, other)
			}
			d.add(CodeUnknownField, keyPos, nodeID, "unknown field %q in %s; %sthe fields are: %s", key, what, hint, strings.Join(names, ", "))
			continue
		}
		d.decodeField(p.Value, join(path, key), what, nodeID, v.Field(f.index))
	}
}

// misplaced names the other DSL struct that has key as a field, for the
// common slip of writing an edge's when on a node or a node's kind on an edge.
func misplaced(t reflect.Type, key string) string {
	others := []struct {
		t    reflect.Type
		name string
	}{{reflect.TypeFor[Node](), "nodes"}, {reflect.TypeFor[Edge](), "edges"}, {reflect.TypeFor[Graph](), "the top level"}, {reflect.TypeFor[Input](), "inputs"}, {reflect.TypeFor[WorkspaceSource](), "workspace"}, {reflect.TypeFor[Budget](), "budget"}}
	for _, o := range others {
		if o.t == t {
			continue
		}
		for _, f := range fieldsOf(o.t) {
			if f.name == key {
				return o.name
			}
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalarString returns the plain text of key's value among ps, or "".
func (d *decoder) scalarString(ps []*ast.MappingValueNode, key string) string {
	for _, p := range ps {
		if keyOf(p) == key {
			if s, ok := d.resolve(p.Value).(ast.ScalarNode); ok {
				if v, ok := s.GetValue().(string); ok {
					return v
				}
				return fmt.Sprint(s.GetValue())
			}
		}
	}
	return ""
}

func (d *decoder) decodeField(n ast.Node, path, what, nodeID string, fv reflect.Value) {
	d.src.set(path, posOf(n))
	name := path[strings.LastIndex(path, ".")+1:]

	// A join's workspace is a string or a mapping.
	if fv.Type() == reflect.TypeFor[*JoinWorkspace]() {
		d.decodeJoinWorkspace(n, path, what, nodeID, fv)
		return
	}
	// So is a node's network.
	if fv.Type() == reflect.TypeFor[*Network]() {
		d.decodeNetwork(n, path, what, nodeID, fv)
		return
	}

	// A value behind a pointer is read as what it points to: a DSL struct
	// (workspace) is walked like the others, an optional scalar (ask_user)
	// read as its value. The YAML library would leave a pointer to a
	// scalar nil, whatever was written.
	if fv.Kind() == reflect.Pointer {
		if isNull(d.resolve(n)) {
			return
		}
		ev := reflect.New(fv.Type().Elem())
		if ev.Elem().Kind() == reflect.Struct {
			d.decodeStruct(n, path, name, ev.Elem())
		} else {
			d.decodeField(n, path, what, nodeID, ev.Elem())
		}
		fv.Set(ev)
		return
	}

	// Lists of DSL structs (inputs, nodes, edges) are walked here, so that
	// their own fields get the same treatment.
	if fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct {
		r := d.resolve(n)
		if isNull(r) {
			return
		}
		seq, ok := r.(*ast.SequenceNode)
		if !ok {
			d.add(CodeBadValue, posOf(n), nodeID, "%s must be a list (lines starting with '- '), not %s", name, describe(r))
			return
		}
		elemType := fv.Type().Elem()
		out := reflect.MakeSlice(fv.Type(), 0, len(seq.Values))
		for i, item := range seq.Values {
			ev := reflect.New(elemType).Elem()
			itemPath := fmt.Sprintf("%s[%d]", path, i)
			d.decodeStruct(item, itemPath, d.describeItem(name, i, item), ev)
			if pf := ev.FieldByName("Pos"); pf.IsValid() && pf.Type() == posType {
				pf.Set(reflect.ValueOf(posOf(item)))
			}
			out = reflect.Append(out, ev)
		}
		fv.Set(out)
		return
	}

	// A mapping value (with) is checked for repeated keys before the YAML
	// library sees it, so that the problem gets its own code.
	var keyPairs []*ast.MappingValueNode
	if fv.Kind() == reflect.Map {
		ps, _ := d.pairs(n)
		seen := map[string]Pos{}
		dup := false
		for _, p := range ps {
			key := keyOf(p)
			if first, ok := seen[key]; ok {
				d.add(CodeDuplicateKey, posOf(p.Key), nodeID, "%s of %s sets %q twice (first at line %d); keep one of them", name, what, key, first.Line)
				dup = true
				continue
			}
			seen[key] = posOf(p.Key)
		}
		if dup {
			return
		}
		keyPairs = ps
	}

	target := reflect.New(fv.Type())
	if err := yaml.NodeToValue(d.resolveDeep(n), target.Interface()); err != nil {
		pos := posOf(n)
		if p := yamlErrorPos(err); !p.IsZero() && p.Line >= pos.Line {
			pos = p
		}
		d.add(CodeBadValue, pos, nodeID, "bad value for %s in %s: %s%s", name, what, yamlErrorMessage(err), valueHint(name))
		return
	}
	fv.Set(normalize(target.Elem()))

	// Remember where each key of a mapping value (with) was written.
	if fv.Kind() == reflect.Map {
		for _, p := range keyPairs {
			d.src.set(join(path, keyOf(p)), posOf(p.Value))
		}
	}
}

// resolveDeep gives the YAML library a node it can decode on its own:
// aliases at the top are replaced by what they name. Aliases deeper inside a
// value are resolved by the library when their anchor is inside that value.
func (d *decoder) resolveDeep(n ast.Node) ast.Node {
	if a, ok := n.(*ast.AliasNode); ok {
		return d.resolve(a)
	}
	return n
}

// decodeJoinWorkspace reads a join's workspace: a scalar is a mode (which
// Validate checks), a mapping is the pick form, whose keys are checked here
// like any struct's.
func (d *decoder) decodeJoinWorkspace(n ast.Node, path, what, nodeID string, fv reflect.Value) {
	r := d.resolve(n)
	if isNull(r) {
		return
	}
	switch v := r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		w := &JoinWorkspace{Mode: JoinPick}
		d.decodeStruct(n, path, "the workspace of "+what, reflect.ValueOf(w).Elem())
		fv.Set(reflect.ValueOf(w))
	case ast.ScalarNode:
		mode, ok := v.GetValue().(string)
		if !ok {
			mode = fmt.Sprint(v.GetValue())
		}
		fv.Set(reflect.ValueOf(&JoinWorkspace{Mode: mode}))
	default:
		d.add(CodeBadValue, posOf(n), nodeID, "bad value for workspace in %s: %s; write one of %s", what, describe(r), joinForms)
	}
}

// decodeNetwork reads a node's network: a scalar is a mode (which Validate
// checks), a mapping the allow form, whose keys are checked here like any
// struct's.
func (d *decoder) decodeNetwork(n ast.Node, path, what, nodeID string, fv reflect.Value) {
	r := d.resolve(n)
	if isNull(r) {
		return
	}
	switch v := r.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		var f networkAllowForm
		d.decodeStruct(n, path, "the network of "+what, reflect.ValueOf(&f).Elem())
		fv.Set(reflect.ValueOf(&Network{Allow: f.Allow}))
	case ast.ScalarNode:
		mode, ok := v.GetValue().(string)
		if !ok {
			mode = fmt.Sprint(v.GetValue())
		}
		fv.Set(reflect.ValueOf(&Network{Mode: mode}))
	default:
		d.add(CodeBadValue, posOf(n), nodeID, "bad value for network in %s: %s; write %s", what, describe(r), networkForms)
	}
}

func (d *decoder) describeItem(list string, i int, item ast.Node) string {
	ps, _ := d.pairs(item)
	switch list {
	case "nodes":
		if id := d.scalarString(ps, "id"); id != "" {
			return fmt.Sprintf("node %q", id)
		}
		return fmt.Sprintf("node #%d", i+1)
	case "edges":
		from, to := d.scalarString(ps, "from"), d.scalarString(ps, "to")
		if from != "" || to != "" {
			return fmt.Sprintf("edge %s -> %s", orQ(from), orQ(to))
		}
		return fmt.Sprintf("edge #%d", i+1)
	case "inputs":
		if n := d.scalarString(ps, "name"); n != "" {
			return fmt.Sprintf("input %q", n)
		}
		return fmt.Sprintf("input #%d", i+1)
	}
	return fmt.Sprintf("%s item #%d", list, i+1)
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func valueHint(field string) string {
	switch field {
	case "session":
		return " (write one of " + strings.Join(sessionNames, ", ") + ")"
	case "timeout":
		return " (write a Go duration such as 90s or 5m)"
	case "max_visits", "max_tokens":
		return " (write a whole number)"
	case "max_cost_usd":
		return " (write a number of dollars such as 2.50)"
	case "allow_empty", "ask_user":
		return " (write true or false)"
	case "run", "script", "fallback", "tools", "disallowed_tools", "env":
		return " (write a list of strings)"
	case "allow":
		return ` (write a list of quoted "host:port" patterns: unquoted inside [...], host:443 reads as a mapping)`
	}
	return ""
}

func describe(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case nil, *ast.NullNode:
		return "nothing"
	default:
		return fmt.Sprintf("the value %q", n.String())
	}
}

// posOf returns where n was written: for a block mapping, its first key.
func posOf(n ast.Node) Pos {
	switch v := n.(type) {
	case nil:
		return Pos{}
	case *ast.MappingNode:
		if len(v.Values) > 0 && !v.IsFlowStyle {
			return posOf(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return posOf(v.Key)
	case *ast.AnchorNode:
		if v.Value != nil {
			if p := posOf(v.Value); !p.IsZero() {
				return p
			}
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return Pos{}
	}
	return Pos{Line: tk.Position.Line, Column: tk.Position.Column}
}

func yamlErrorPos(err error) Pos {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return Pos{Line: tk.Position.Line, Column: tk.Position.Column}
		}
	}
	return Pos{}
}

func yamlErrorMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return ye.GetMessage()
	}
	return err.Error()
}

// normalize makes decoded numbers predictable: the YAML library yields
// uint64 for positive and int64 for negative integers, and Tether hands
// literal values on as int.
// Empty lists and mappings become nil, as Encode leaves them out.
func normalize(v reflect.Value) reflect.Value {
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
		return reflect.Zero(v.Type())
	}
	if v.Kind() != reflect.Interface && v.Kind() != reflect.Map {
		return v
	}
	out := normalizeAny(v.Interface())
	if out == nil {
		return reflect.Zero(v.Type())
	}
	return reflect.ValueOf(out).Convert(v.Type())
}

func normalizeAny(v any) any {
	switch x := v.(type) {
	case uint64:
		if x <= uint64(maxInt) {
			return int(x)
		}
	case int64:
		if x >= int64(minInt) && x <= int64(maxInt) {
			return int(x)
		}
	case []any:
		for i := range x {
			x[i] = normalizeAny(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeAny(e)
		}
	}
	return v
}

const (
	maxInt = int(^uint(0) >> 1)
	minInt = -maxInt - 1
)

// closest returns the candidate nearest to s by edit distance, if it is
// close enough to be a likely typo.
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
