package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// This file reads the small subset of YAML that HyperNode manifests and
// Slurm's topology.yaml use: "---"-separated documents of block mappings
// and block sequences, plain and quoted scalars, one-level flow
// collections ([a, b], {k: v}) and # comments. Anchors, tags and multi-line
// scalars are ErrUnsupported. A document is returned as map[string]any,
// []any and string values. JSON input (first byte { or [) is decoded by
// encoding/json into the same shapes, numbers as strings.

type yamlLine struct {
	indent int
	text   string
	num    int
}

type yamlParser struct {
	lines []yamlLine
	pos   int
}

// decodeDocuments returns the documents of a JSON or YAML input.
func decodeDocuments(data []byte) ([]any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var docs []any
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("%w: json: %v", ErrSyntax, err)
			}
			docs = append(docs, normalizeJSON(v))
		}
		return docs, nil
	}
	var docs []any
	var cur []yamlLine
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		p := &yamlParser{lines: cur}
		v, err := p.block(cur[0].indent)
		if err != nil {
			return err
		}
		if p.pos < len(p.lines) {
			return fmt.Errorf("%w: yaml line %d: unexpected indentation", ErrSyntax, p.lines[p.pos].num)
		}
		docs = append(docs, v)
		cur = nil
		return nil
	}
	for i, raw := range strings.Split(string(data), "\n") {
		raw = strings.TrimRight(raw, "\r")
		if raw == "---" || raw == "..." || strings.HasPrefix(raw, "--- ") {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		text := stripComment(raw)
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(trimmed) == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "\t") {
			return nil, fmt.Errorf("%w: yaml line %d: tab in indentation", ErrSyntax, i+1)
		}
		cur = append(cur, yamlLine{indent: len(text) - len(trimmed), text: strings.TrimRight(trimmed, " \t"), num: i + 1})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

func normalizeJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	return v
}

// stripComment cuts a # comment that starts a line or follows a blank,
// outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// block parses the node whose first line is at p.pos, indented by indent.
func (p *yamlParser) block(indent int) (any, error) {
	if p.pos >= len(p.lines) || p.lines[p.pos].indent < indent {
		return "", nil
	}
	l := p.lines[p.pos]
	if isSeqItem(l.text) {
		return p.sequence(l.indent)
	}
	if _, _, ok := splitKey(l.text); ok {
		return p.mapping(l.indent)
	}
	p.pos++
	return scalarOrFlow(l.text, l.num)
}

func (p *yamlParser) sequence(indent int) (any, error) {
	out := []any{}
	for p.pos < len(p.lines) && p.lines[p.pos].indent == indent && isSeqItem(p.lines[p.pos].text) {
		l := p.lines[p.pos]
		rest := strings.TrimLeft(l.text[1:], " ")
		if rest == "" {
			p.pos++
			v, err := p.block(indent + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		// "- key: v" opens a mapping whose keys line up with "key".
		p.lines[p.pos] = yamlLine{indent: indent + len(l.text) - len(rest), text: rest, num: l.num}
		v, err := p.block(p.lines[p.pos].indent)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *yamlParser) mapping(indent int) (any, error) {
	out := map[string]any{}
	for p.pos < len(p.lines) && p.lines[p.pos].indent == indent && !isSeqItem(p.lines[p.pos].text) {
		l := p.lines[p.pos]
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, fmt.Errorf("%w: yaml line %d: expected key: value", ErrSyntax, l.num)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%w: yaml line %d: key %q twice", ErrSyntax, l.num, key)
		}
		p.pos++
		var v any = ""
		var err error
		switch {
		case rest != "":
			v, err = scalarOrFlow(rest, l.num)
		case p.pos < len(p.lines) && p.lines[p.pos].indent > indent:
			v, err = p.block(p.lines[p.pos].indent)
		case p.pos < len(p.lines) && p.lines[p.pos].indent == indent && isSeqItem(p.lines[p.pos].text):
			v, err = p.sequence(indent)
		}
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

// splitKey splits "key: rest" (or "key:"), the key plain or quoted.
func splitKey(text string) (key, rest string, ok bool) {
	i := 0
	if text != "" && (text[0] == '"' || text[0] == '\'') {
		end := strings.IndexByte(text[1:], text[0])
		if end < 0 {
			return "", "", false
		}
		i = end + 2
		if i >= len(text) || text[i] != ':' {
			return "", "", false
		}
	} else {
		if text == "" || text[0] == '[' || text[0] == '{' {
			return "", "", false
		}
		for i = 0; i < len(text); i++ {
			if text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ') {
				break
			}
		}
		if i == len(text) {
			return "", "", false
		}
	}
	k, err := unquote(strings.TrimSpace(text[:i]))
	if err != nil || k == "" {
		return "", "", false
	}
	return k, strings.TrimSpace(text[i+1:]), true
}

func unquote(s string) (string, error) {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strconv.Unquote(s)
	}
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		return "", fmt.Errorf("unterminated quote")
	}
	return s, nil
}

func scalarOrFlow(s string, line int) (any, error) {
	bad := func(why string) error { return fmt.Errorf("%w: yaml line %d: %s", ErrSyntax, line, why) }
	switch {
	case s[0] == '&' || s[0] == '*' || s[0] == '!' || s[0] == '|' || s[0] == '>':
		return nil, fmt.Errorf("%w: yaml line %d: anchors, tags and block scalars", ErrUnsupported, line)
	case s[0] == '[':
		if s[len(s)-1] != ']' {
			return nil, bad("unclosed [")
		}
		out := []any{}
		for _, item := range splitFlow(s[1 : len(s)-1]) {
			v, err := flowScalar(item)
			if err != nil {
				return nil, bad(err.Error())
			}
			out = append(out, v)
		}
		return out, nil
	case s[0] == '{':
		if s[len(s)-1] != '}' {
			return nil, bad("unclosed {")
		}
		out := map[string]any{}
		for _, item := range splitFlow(s[1 : len(s)-1]) {
			k, v, ok := splitKey(item)
			if !ok {
				return nil, bad("expected key: value in {}")
			}
			sv, err := flowScalar(v)
			if err != nil {
				return nil, bad(err.Error())
			}
			out[k] = sv
		}
		return out, nil
	}
	v, err := unquote(s)
	if err != nil {
		return nil, bad(err.Error())
	}
	return v, nil
}

func flowScalar(s string) (string, error) {
	if strings.ContainsAny(s, "[]{}") && !(len(s) > 0 && (s[0] == '"' || s[0] == '\'')) {
		return "", fmt.Errorf("nested flow collection")
	}
	return unquote(s)
}

// splitFlow splits a flow collection's body on commas outside quotes,
// dropping empty items.
func splitFlow(body string) []string {
	var parts []string
	var quote byte
	start := 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) {
			c := body[i]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
				continue
			}
			if c == '"' || c == '\'' {
				quote = c
				continue
			}
			if c != ',' {
				continue
			}
		}
		if item := strings.TrimSpace(body[start:i]); item != "" {
			parts = append(parts, item)
		}
		start = i + 1
	}
	return parts
}

// Accessors over decoded documents, each naming the path on failure.

func asMap(v any, path string) (map[string]any, error) {
	if v == "" || v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a mapping", ErrSyntax, path)
	}
	return m, nil
}

func asList(v any, path string) ([]any, error) {
	if v == "" || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a list", ErrSyntax, path)
	}
	return l, nil
}

func asString(v any, path string) (string, error) {
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s is not a scalar", ErrSyntax, path)
	}
	return s, nil
}
