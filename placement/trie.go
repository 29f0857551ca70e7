package placement

// usageTrie maps node numbers to their usage. It is a persistent array: a
// trie of fan-out 64 whose Clone copies the root pointer (O(1)) and whose
// writes copy the path they touch when another State shares it, the same
// copy-on-write scheme btree.BTreeG uses, with lookups in depth pointer
// hops (2 levels up to 4,096 nodes) instead of comparisons.
type usageTrie struct {
	root  *trieNode
	shift uint // 6 × (levels − 1)
}

const (
	trieBits = 6
	trieFan  = 1 << trieBits
	trieMask = trieFan - 1
)

type trieNode struct {
	cow   *cowToken
	inner *[trieFan]*trieNode
	leaf  *[trieFan]*nodeUse
}

// newUsageTrie returns a trie able to hold n nodes, owned by cow.
func newUsageTrie(n int, cow *cowToken) usageTrie {
	var shift uint
	for cap := trieFan; cap < n; cap <<= trieBits {
		shift += trieBits
	}
	return usageTrie{root: newTrieNode(shift, cow), shift: shift}
}

func newTrieNode(shift uint, cow *cowToken) *trieNode {
	if shift == 0 {
		return &trieNode{cow: cow, leaf: new([trieFan]*nodeUse)}
	}
	return &trieNode{cow: cow, inner: new([trieFan]*trieNode)}
}

func (tr *usageTrie) get(n int32) *nodeUse {
	t := tr.root
	for s := tr.shift; s > 0; s -= trieBits {
		t = t.inner[(uint(n)>>s)&trieMask]
	}
	return t.leaf[uint(n)&trieMask]
}

// set stores u for node n, copying the trie nodes on the path that cow
// does not own (and creating missing ones).
func (tr *usageTrie) set(n int32, u *nodeUse, cow *cowToken) {
	p := &tr.root
	for s := tr.shift; ; s -= trieBits {
		t := *p
		if t.cow != cow {
			c := &trieNode{cow: cow}
			if t.inner != nil {
				in := *t.inner
				c.inner = &in
			} else {
				lf := *t.leaf
				c.leaf = &lf
			}
			t = c
			*p = t
		}
		if s == 0 {
			t.leaf[uint(n)&trieMask] = u
			return
		}
		i := (uint(n) >> s) & trieMask
		if t.inner[i] == nil {
			t.inner[i] = newTrieNode(s-trieBits, cow)
		}
		p = &t.inner[i]
	}
}
