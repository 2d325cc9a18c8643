package planner

// Lowering rules. The binder resolves names and types into a logical
// plan that says what the statement means; the rules below decide how
// that plan maps onto the nodes the runtime has. Each rule is small and
// named, and Lower reports which fired (the datadriven tests in
// testdata/rules show them), as RisingWave's and Flink's rule sets do.

// Rule is one named lowering step: Apply returns the node that replaces
// n, and whether it changed anything. Rules see each node after its
// children were lowered.
type Rule struct {
	Name  string
	Apply func(n Node) (Node, bool)
}

// Rules are the lowering rules, in the order they are tried on a node.
var Rules = []Rule{
	{Name: "WindowTVFToEventTime", Apply: windowTVFToEventTime},
	{Name: "JoinResidualToFilter", Apply: joinResidualToFilter},
	{Name: "JoinResidualToNullMask", Apply: joinResidualToNullMask},
}

// Lower applies the rules to the plan bottom-up and returns the lowered
// plan and the names of the rules that fired, in order.
func Lower(n Node) (Node, []string) {
	var fired []string
	var walk func(Node) Node
	walk = func(n Node) Node {
		ch := n.Children()
		changed := false
		nch := make([]Node, len(ch))
		for i, c := range ch {
			nch[i] = walk(c)
			changed = changed || nch[i] != c
		}
		if changed {
			n = withChildren(n, nch)
		}
		for _, r := range Rules {
			if m, ok := r.Apply(n); ok {
				fired = append(fired, r.Name)
				n = m
			}
		}
		return n
	}
	return walk(n), fired
}

// withChildren returns a copy of n reading ch. Nodes without children,
// and node kinds the rules never rebuild, come back as they are.
func withChildren(n Node, ch []Node) Node {
	switch x := n.(type) {
	case *Filter:
		c := *x
		c.Input = ch[0]
		return &c
	case *Project:
		c := *x
		c.Input = ch[0]
		return &c
	case *Aggregate:
		c := *x
		c.Input = ch[0]
		return &c
	case *Rekey:
		c := *x
		c.Input = ch[0]
		return &c
	case *FlatMap:
		c := *x
		c.Input = ch[0]
		return &c
	case *Sink:
		c := *x
		c.Input = ch[0]
		return &c
	case *WindowTVF:
		c := *x
		c.Input = ch[0]
		return &c
	case *Union:
		c := *x
		c.Inputs = ch
		return &c
	case *Join:
		c := *x
		c.Left, c.Right = ch[0], ch[1]
		return &c
	}
	return n
}
