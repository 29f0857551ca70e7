package scheduler

import (
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/goodsched/goodsched/"

// TestFrameworkNamesNoPolicy: the framework's files import no policy or
// search package; only pollux.go, the built-in default policy, imports
// its engine (the baselines and the genetic reference live above the
// scheduler).
func TestFrameworkNamesNoPolicy(t *testing.T) {
	policyFiles := []string{"pollux.go"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || slices.Contains(policyFiles, f) {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module+"scheduler/") && p != module+"scheduler/quota" && p != module+"scheduler/tiers" {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestLayering: no package below the scheduler imports it, directly or
// through another package of the module.
func TestLayering(t *testing.T) {
	below := map[string]string{"accel": "../accel", "goodput": "../goodput", "carbon": "../carbon", "placement": "../placement",
		"energy": "../energy", "internal/nodeset": "../internal/nodeset", "scheduler/quota": "quota", "scheduler/tiers": "tiers", "scheduler/pollux": "pollux"}
	dirOf := func(path string) string {
		rel := strings.TrimPrefix(path, module)
		if strings.HasPrefix(rel, "scheduler/") {
			return strings.TrimPrefix(rel, "scheduler/")
		}
		return "../" + rel
	}
	for name, dir := range below {
		seen := map[string]bool{}
		var walk func(dir, path string)
		walk = func(dir, path string) {
			if seen[path] {
				return
			}
			seen[path] = true
			pkg, err := build.ImportDir(dir, 0)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, im := range pkg.Imports {
				if !strings.HasPrefix(im, module) {
					continue
				}
				if im == module+"scheduler" {
					t.Errorf("%s imports the scheduler (through %s)", name, path)
				}
				walk(dirOf(im), im)
			}
		}
		walk(dir, module+name)
	}
}
