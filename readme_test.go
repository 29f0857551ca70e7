package goodsched_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeProgramBuilds builds the complete program of README.md's
// "one scheduling round" as written: a reader who copies it gets a program
// that compiles against today's API.
func TestReadmeProgramBuilds(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build README.md's program")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var program string
	for _, block := range strings.Split(string(readme), "```go\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(code, "package main\n") {
			program = code
			break
		}
	}
	if program == "" {
		t.Fatal("README.md has no complete program (a go block starting with package main)")
	}
	file := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(file, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goBin, "build", "-o", os.DevNull, file).CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's program does not build: %v\n%s", err, out)
	}
}
