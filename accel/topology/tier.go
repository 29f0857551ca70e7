package topology

// Tier numbers how far up the tree a span reaches, innermost first: 0 is
// one node (no network tier crossed), 1 the innermost level, len(Levels())
// the outermost level, and len(Levels())+1 a set of nodes that share no
// domain (traffic crosses the root: the spine). It is the index the goodput
// package's tiered synchronisation model (goodput.TierParams) takes.
func (t *Topology) Tier(s Span) int {
	switch {
	case s.SameNode:
		return 0
	case s.Level == "":
		return len(t.levels) + 1
	}
	i, err := t.LevelIndex(s.Level)
	if err != nil {
		return len(t.levels) + 1 // a span of another topology: the root
	}
	return len(t.levels) - i
}

// TierOf returns the Tier of the span of nodes: the slowest tier a gang
// on these nodes synchronises over. Errors: those of Span (ErrUnknownNode,
// also for an empty set).
func (t *Topology) TierOf(nodes []string) (int, error) {
	s, err := t.Span(nodes)
	if err != nil {
		return 0, err
	}
	return t.Tier(s), nil
}

// TierBandwidths returns the bandwidth of each tier, indexed as Tier: 0
// for tier 0 (inside a node: not a network tier) and for the root tier
// (no level describes it), and each level's Bandwidth (0 = unknown) in
// between. The goodput package takes it as its tier prior
// (goodput.TierOptions.Bandwidths).
func (t *Topology) TierBandwidths() []float64 {
	out := make([]float64, len(t.levels)+2)
	for i, l := range t.levels {
		out[len(t.levels)-i] = l.Bandwidth
	}
	return out
}
