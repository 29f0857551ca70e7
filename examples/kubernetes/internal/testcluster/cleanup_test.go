package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes TestHelperClusterUntilKilled run: it is a child of
// TestInterruptedRunLeavesNothingBehind, not a test of its own.
const helperEnv = "GOODSCHED_TESTCLUSTER_HELPER"

// TestInterruptedRunLeavesNothingBehind interrupts a test binary that
// runs a cluster — with SIGINT (Ctrl-C), SIGTERM and SIGKILL (a hard
// stop, as go test's -timeout does) — and checks that no process of the
// cluster survives and that its directory is gone (after SIGKILL, once the
// next Start has swept it).
func TestInterruptedRunLeavesNothingBehind(t *testing.T) {
	Assets(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClusterUntilKilled$", "-test.timeout=3m")
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var dir string
			var pids []int
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(sc.Text(), "cluster "); ok {
					dir, pids = parseHelperLine(t, rest)
					break
				}
			}
			if dir == "" || len(pids) < 2 {
				t.Fatalf("the helper did not report its cluster (dir %q, pids %v)", dir, pids)
			}
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("process %d is not running before the signal", pid)
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(15 * time.Second)
			for _, pid := range pids {
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("process %d of the cluster survived %v", pid, sig)
				}
			}
			if sig == syscall.SIGKILL {
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("after SIGKILL the directory is already gone (%v): nothing left to sweep", err)
				}
				removeStaleDirs(filepath.Dir(dir))
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after %v the cluster's directory %s is left (%v)", sig, dir, err)
			}
		})
	}
}

// TestHelperClusterUntilKilled starts a cluster, prints its directory and
// processes, and waits to be killed.
func TestHelperClusterUntilKilled(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("runs only as TestInterruptedRunLeavesNothingBehind's child")
	}
	c := Start(t, Options{})
	live.mu.Lock()
	var pids []string
	for pid := range live.pids {
		pids = append(pids, strconv.Itoa(pid))
	}
	live.mu.Unlock()
	slices.Sort(pids)
	fmt.Printf("cluster %s %s\n", c.Dir, strings.Join(pids, ","))
	<-time.After(2 * time.Minute)
	t.Error("not killed within 2 minutes")
}

func parseHelperLine(t *testing.T, s string) (string, []int) {
	dir, list, _ := strings.Cut(s, " ")
	var pids []int
	for _, f := range strings.Split(list, ",") {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper line %q: %v", s, err)
		}
		pids = append(pids, pid)
	}
	return dir, pids
}

// alive reports whether a process exists and is not a zombie (a killed
// process whose parent is gone may wait as one for a reaper).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
