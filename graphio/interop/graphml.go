package interop

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
)

// GraphML attribute types (the attr.type of a <key>).
const (
	TypeString = "string"
	TypeLong   = "long"
	TypeDouble = "double"
	TypeInt    = "int"
	TypeFloat  = "float"
	TypeBool   = "boolean"
)

// Key declares one GraphML attribute.
type Key struct {
	ID   string // the key id used by <data key=…>; assigned by Encode when empty
	For  string // "node", "edge" or "graph"
	Name string // attr.name
	Type string // attr.type
}

// Element is a GraphML node or edge with its attributes by attr.name.
type Element struct {
	ID             string
	Source, Target string // edges only
	Data           map[string]string
	Line           int // line of the element in the file it was read from
}

// Graph is a GraphML document holding one graph.
type Graph struct {
	Directed  bool
	Keys      []Key
	GraphData map[string]string
	Nodes     []Element
	Edges     []Element
}

// Encode writes g as GraphML. Attributes are written in the order of g.Keys; a value
// absent from an element's Data is left out. Characters XML 1.0 cannot hold are
// replaced by U+FFFD.
func (g *Graph) Encode(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	ids := map[[2]string]string{}
	keys := make([]Key, len(g.Keys))
	for i, k := range g.Keys {
		if k.ID == "" {
			k.ID = fmt.Sprintf("d%d", i)
		}
		keys[i] = k
		ids[[2]string{k.For, k.Name}] = k.ID
	}
	esc := func(s string) { _ = xml.EscapeText(bw, []byte(s)) }
	attr := func(s string) {
		// EscapeText escapes quotes too, so it is safe inside an attribute.
		esc(s)
	}
	bw.WriteString(`<?xml version='1.0' encoding='utf-8'?>` + "\n")
	bw.WriteString(`<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">` + "\n")
	for _, k := range keys {
		bw.WriteString(`  <key id="`)
		attr(k.ID)
		bw.WriteString(`" for="`)
		attr(k.For)
		bw.WriteString(`" attr.name="`)
		attr(k.Name)
		bw.WriteString(`" attr.type="`)
		attr(k.Type)
		bw.WriteString("\" />\n")
	}
	def := "undirected"
	if g.Directed {
		def = "directed"
	}
	bw.WriteString(`  <graph edgedefault="` + def + "\">\n")
	data := func(indent, kind string, d map[string]string) {
		for _, k := range keys {
			if k.For != kind {
				continue
			}
			v, ok := d[k.Name]
			if !ok {
				continue
			}
			bw.WriteString(indent + `<data key="`)
			attr(k.ID)
			bw.WriteString(`">`)
			esc(v)
			bw.WriteString("</data>\n")
		}
	}
	data("    ", "graph", g.GraphData)
	for _, n := range g.Nodes {
		bw.WriteString(`    <node id="`)
		attr(n.ID)
		if len(n.Data) == 0 {
			bw.WriteString("\" />\n")
			continue
		}
		bw.WriteString("\">\n")
		data("      ", "node", n.Data)
		bw.WriteString("    </node>\n")
	}
	for _, e := range g.Edges {
		bw.WriteString(`    <edge `)
		if e.ID != "" {
			bw.WriteString(`id="`)
			attr(e.ID)
			bw.WriteString(`" `)
		}
		bw.WriteString(`source="`)
		attr(e.Source)
		bw.WriteString(`" target="`)
		attr(e.Target)
		if len(e.Data) == 0 {
			bw.WriteString("\" />\n")
			continue
		}
		bw.WriteString("\">\n")
		data("      ", "edge", e.Data)
		bw.WriteString("    </edge>\n")
	}
	bw.WriteString("  </graph>\n</graphml>\n")
	return bw.Flush()
}

// KeyType returns the declared type of the attribute name on kind ("node", "edge").
func (g *Graph) KeyType(kind, name string) string {
	for _, k := range g.Keys {
		if k.Name == name && (k.For == kind || k.For == "all") {
			return k.Type
		}
	}
	return ""
}

// DecodeGraphML reads a GraphML document holding one graph. file names the input in
// errors, which also give the line and the record (node or edge) at fault.
func DecodeGraphML(r io.Reader, file string) (*Graph, error) {
	d := xml.NewDecoder(r)
	g := &Graph{GraphData: map[string]string{}}
	keyName := map[string]Key{}
	line := func() int { l, _ := d.InputPos(); return l }
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, line(), fmt.Sprintf(format, args...))
	}
	var cur *Element // element being read
	var curKind string
	graphs := 0
	sawRoot := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fail("malformed GraphML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			get := func(name string) (string, bool) {
				for _, a := range t.Attr {
					if a.Name.Local == name {
						return a.Value, true
					}
				}
				return "", false
			}
			switch t.Name.Local {
			case "graphml":
				sawRoot = true
			case "key":
				id, _ := get("id")
				name, ok := get("attr.name")
				if !ok {
					name = id
				}
				for_, _ := get("for")
				typ, ok := get("attr.type")
				if !ok {
					typ = TypeString
				}
				if id == "" {
					return nil, fail("key without an id")
				}
				k := Key{ID: id, For: for_, Name: name, Type: typ}
				keyName[id] = k
				g.Keys = append(g.Keys, k)
			case "graph":
				graphs++
				if graphs > 1 {
					return nil, fail("more than one graph (nested graphs and hypergraphs are not supported)")
				}
				ed, _ := get("edgedefault")
				g.Directed = ed == "directed"
			case "node":
				if cur != nil {
					return nil, fail("nested node inside %s %q", curKind, cur.ID)
				}
				id, ok := get("id")
				if !ok {
					return nil, fail("node without an id")
				}
				g.Nodes = append(g.Nodes, Element{ID: id, Data: map[string]string{}, Line: line()})
				cur, curKind = &g.Nodes[len(g.Nodes)-1], "node"
			case "edge":
				if cur != nil {
					return nil, fail("nested edge inside %s %q", curKind, cur.ID)
				}
				src, ok1 := get("source")
				dst, ok2 := get("target")
				if !ok1 || !ok2 {
					return nil, fail("edge %d without source or target", len(g.Edges))
				}
				id, _ := get("id")
				g.Edges = append(g.Edges, Element{ID: id, Source: src, Target: dst, Data: map[string]string{}, Line: line()})
				cur, curKind = &g.Edges[len(g.Edges)-1], "edge"
			case "data":
				key, _ := get("key")
				k, ok := keyName[key]
				if !ok {
					return nil, fail("data refers to undeclared key %q", key)
				}
				var v struct {
					Text string `xml:",chardata"`
				}
				if err := d.DecodeElement(&v, &t); err != nil {
					return nil, fail("malformed data %q: %v", k.Name, err)
				}
				if cur != nil {
					cur.Data[k.Name] = v.Text
				} else {
					g.GraphData[k.Name] = v.Text
				}
			case "hyperedge", "port":
				return nil, fail("GraphML %s elements are not supported", t.Name.Local)
			}
		case xml.EndElement:
			if t.Name.Local == "node" || t.Name.Local == "edge" {
				cur = nil
			}
		}
	}
	if !sawRoot {
		return nil, fmt.Errorf("%s: not a GraphML document (no <graphml> element)", file)
	}
	if graphs == 0 {
		return nil, fmt.Errorf("%s: GraphML document has no <graph>", file)
	}
	return g, nil
}

// check checks that node ids are unique and that every edge joins two of them.
func (g *Graph) check(file string) error {
	seen := make(map[string]struct{}, len(g.Nodes))
	for _, n := range g.Nodes {
		if _, dup := seen[n.ID]; dup {
			return fmt.Errorf("%s:%d: duplicate node id %q", file, n.Line, n.ID)
		}
		seen[n.ID] = struct{}{}
	}
	for i, e := range g.Edges {
		for _, end := range []string{e.Source, e.Target} {
			if _, ok := seen[end]; !ok {
				return fmt.Errorf("%s:%d: edge %d (%s → %s) refers to unknown node %q", file, e.Line, i, e.Source, e.Target, end)
			}
		}
	}
	return nil
}
