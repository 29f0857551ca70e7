package gavel

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodsched/goodsched/accel"
)

// Entry is one measured throughput: a job of class Class on Scale devices
// of type Type runs StepsPerSecond training steps per second (0 = it cannot
// run there, for example out of memory).
type Entry struct {
	Class          string
	Scale          int
	Type           accel.TypeKey
	StepsPerSecond float64
}

// Table is a throughput matrix keyed by job class, scale and accelerator
// type. Build one from a user's entries (NewTable), a CSV (ReadCSV),
// Gavel's simulation_throughputs.json (ReadGavelJSON) or the embedded
// extract of Gavel's published matrix (Published); Config.Throughput can
// then look jobs up in it (Table.Throughput). A Table is immutable once
// built and safe for concurrent use.
type Table struct {
	byClass map[string][]cell // the entries by class: Lookup hashes the class alone
	n       int               // entries
	types   []accel.TypeKey
	classes []string
}

// cell is one entry of a class's row.
type cell struct {
	scale int
	typ   accel.TypeKey
	v     float64
}

// NewTable builds a table from entries. Types are canonicalised with
// accel.CanonicalType; a repeated (class, scale, type), an empty class, a
// scale < 1 or a NaN, infinite or negative throughput is an error wrapping
// ErrInvalid.
func NewTable(entries []Entry) (*Table, error) {
	t := &Table{byClass: map[string][]cell{}, n: len(entries)}
	types := map[accel.TypeKey]bool{}
	for i, e := range entries {
		typ, err := accel.CanonicalType(string(e.Type))
		if err != nil {
			return nil, fmt.Errorf("%w: entries[%d].Type: %w", ErrInvalid, i, err)
		}
		switch v := e.StepsPerSecond; {
		case strings.TrimSpace(e.Class) == "":
			return nil, fmt.Errorf("%w: entries[%d].Class is empty", ErrInvalid, i)
		case e.Scale < 1:
			return nil, fmt.Errorf("%w: entries[%d].Scale = %d", ErrInvalid, i, e.Scale)
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return nil, fmt.Errorf("%w: entries[%d].StepsPerSecond = %v", ErrInvalid, i, v)
		}
		if _, dup := t.Lookup(e.Class, e.Scale, typ); dup {
			return nil, fmt.Errorf("%w: entries[%d]: %q scale %d on %s is repeated", ErrInvalid, i, e.Class, e.Scale, typ)
		}
		t.byClass[e.Class] = append(t.byClass[e.Class], cell{e.Scale, typ, e.StepsPerSecond})
		types[typ] = true
	}
	t.types = slices.Sorted(maps.Keys(types))
	t.classes = slices.Sorted(maps.Keys(t.byClass))
	return t, nil
}

// Lookup returns the throughput of class on scale devices of typ, and
// whether the table has that entry.
func (t *Table) Lookup(class string, scale int, typ accel.TypeKey) (float64, bool) {
	for _, c := range t.byClass[class] {
		if c.scale == scale && c.typ == typ {
			return c.v, true
		}
	}
	return 0, false
}

// Types returns the table's accelerator types, sorted.
func (t *Table) Types() []accel.TypeKey { return slices.Clone(t.types) }

// Classes returns the table's job classes, sorted.
func (t *Table) Classes() []string { return slices.Clone(t.classes) }

// Len returns the number of entries.
func (t *Table) Len() int { return t.n }

// ReadCSV reads a table in the form
//
//	class,scale,<type>,<type>,...
//	ResNet-50 (batch size 64),1,4.39,2.62,0.62
//
// one row per (class, scale), one column per accelerator type (headers go
// through accel.CanonicalType, so "v100" becomes "v100-16gb"); an empty
// cell means not measured. Errors wrap ErrInvalid and name line and column.
func ReadCSV(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: csv header: %w", ErrInvalid, err)
	}
	if len(head) < 3 || strings.TrimSpace(strings.ToLower(head[0])) != "class" || strings.TrimSpace(strings.ToLower(head[1])) != "scale" {
		return nil, fmt.Errorf("%w: csv header must be class,scale,<type>,...", ErrInvalid)
	}
	types := make([]accel.TypeKey, len(head)-2)
	for i, h := range head[2:] {
		typ, err := accel.CanonicalType(h)
		if err != nil {
			return nil, fmt.Errorf("%w: csv header column %d: %w", ErrInvalid, i+3, err)
		}
		types[i] = typ
	}
	var entries []Entry
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: csv line %d: %w", ErrInvalid, line, err)
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%w: csv line %d has %d fields, want %d", ErrInvalid, line, len(rec), len(head))
		}
		scale, err := strconv.Atoi(strings.TrimSpace(rec[1]))
		if err != nil {
			return nil, fmt.Errorf("%w: csv line %d scale: %w", ErrInvalid, line, err)
		}
		for i, cell := range rec[2:] {
			cell = strings.TrimSpace(cell)
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: csv line %d column %d: %w", ErrInvalid, line, i+3, err)
			}
			entries = append(entries, Entry{Class: strings.TrimSpace(rec[0]), Scale: scale, Type: types[i], StepsPerSecond: v})
		}
	}
	t, err := NewTable(entries)
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	return t, nil
}

// ReadGavelJSON reads Gavel's simulation_throughputs.json
// ({worker_type: {"(job_type, scale)": {"null": steps/s, ...}}}) and keeps
// the isolated ("null") throughputs. Worker types with a suffix such as
// "_unconsolidated" are skipped unless keepVariants is set, in which case
// the suffix becomes part of the type key ("v100-unconsolidated").
func ReadGavelJSON(r io.Reader, keepVariants bool) (*Table, error) {
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: gavel json: %w", ErrInvalid, err)
	}
	var entries []Entry
	for _, wt := range slices.Sorted(maps.Keys(raw)) {
		name := wt
		if strings.Contains(wt, "_") {
			if !keepVariants {
				continue
			}
			name = strings.ReplaceAll(wt, "_", "-")
		}
		typ, err := accel.CanonicalType(name)
		if err != nil {
			return nil, fmt.Errorf("%w: gavel json worker type %q: %w", ErrInvalid, wt, err)
		}
		for _, key := range slices.Sorted(maps.Keys(raw[wt])) {
			class, scale, err := parseGavelKey(key)
			if err != nil {
				return nil, fmt.Errorf("%w: gavel json %s: %w", ErrInvalid, wt, err)
			}
			iso, ok := raw[wt][key]["null"]
			if !ok {
				continue
			}
			var v float64
			if err := json.Unmarshal(iso, &v); err != nil {
				return nil, fmt.Errorf("%w: gavel json %s %s: %w", ErrInvalid, wt, key, err)
			}
			entries = append(entries, Entry{Class: class, Scale: scale, Type: typ, StepsPerSecond: v})
		}
	}
	t, err := NewTable(entries)
	if err != nil {
		return nil, fmt.Errorf("gavel json: %w", err)
	}
	return t, nil
}

// parseGavelKey parses a Python tuple repr such as
// "('ResNet-50 (batch size 64)', 1)".
func parseGavelKey(s string) (string, int, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return "", 0, fmt.Errorf("key %q is not a (job_type, scale) tuple", s)
	}
	body := s[1 : len(s)-1]
	i := strings.LastIndex(body, ",")
	if i < 0 {
		return "", 0, fmt.Errorf("key %q is not a (job_type, scale) tuple", s)
	}
	name := strings.TrimSpace(body[:i])
	if len(name) < 2 || (name[0] != '\'' && name[0] != '"') || name[len(name)-1] != name[0] {
		return "", 0, fmt.Errorf("key %q: job type is not quoted", s)
	}
	scale, err := strconv.Atoi(strings.TrimSpace(body[i+1:]))
	if err != nil {
		return "", 0, fmt.Errorf("key %q: %w", s, err)
	}
	return name[1 : len(name)-1], scale, nil
}

//go:embed testdata/gavel_throughputs.csv
var publishedCSV []byte

// Published returns the isolated throughputs of Gavel's published matrix
// (simulation_throughputs.json of stanford-futuredata/gavel @ c4fa400, MIT
// licence): 26 job classes at scales 1, 2, 4 and 8 on v100-16gb, p100 and
// k80, in steps per second. It is parsed on each call; the error is
// always nil unless the embedded file was damaged.
func Published() (*Table, error) {
	return ReadCSV(bytes.NewReader(publishedCSV))
}
