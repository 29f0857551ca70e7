package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHostlist bounds the names one hostlist expression may expand to, so
// that a typo such as node[0-999999999] is an error, not an exhausted heap.
const maxHostlist = 1 << 20

// ExpandHostlist expands a Slurm hostlist expression: comma-separated
// names, each with any number of bracketed range lists, e.g.
// "tux[0-3,7],login" or "node[01-04]" (a zero-padded start keeps its
// width). Errors: ErrSyntax.
func ExpandHostlist(expr string) ([]string, error) {
	var out []string
	for _, item := range splitTopLevel(expr) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		names, err := expandOne(item, maxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("%w: hostlist %q: %v", ErrSyntax, expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTopLevel splits on commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func expandOne(item string, budget int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.IndexByte(item, ']') >= 0 {
			return nil, fmt.Errorf("unmatched ]")
		}
		return []string{item}, nil
	}
	closing := strings.IndexByte(item[open:], ']')
	if closing < 0 {
		return nil, fmt.Errorf("unmatched [")
	}
	closing += open
	prefix, body, rest := item[:open], item[open+1:closing], item[closing+1:]
	if strings.IndexByte(prefix, ']') >= 0 || strings.IndexByte(body, '[') >= 0 {
		return nil, fmt.Errorf("misplaced bracket")
	}
	var heads []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, found := strings.Cut(r, "-")
		if !found {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 31)
		b, err2 := strconv.ParseUint(hi, 10, 31)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("bad range %q", r)
		}
		if int(b-a)+1 > budget-len(heads) {
			return nil, fmt.Errorf("more than %d names", maxHostlist)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for v := a; v <= b; v++ {
			heads = append(heads, fmt.Sprintf("%s%0*d", prefix, width, v))
		}
	}
	tails, err := expandOne(rest, budget)
	if err != nil {
		return nil, err
	}
	if len(heads)*len(tails) > budget {
		return nil, fmt.Errorf("more than %d names", maxHostlist)
	}
	out := make([]string, 0, len(heads)*len(tails))
	for _, h := range heads {
		for _, t := range tails {
			out = append(out, h+t)
		}
	}
	return out, nil
}
