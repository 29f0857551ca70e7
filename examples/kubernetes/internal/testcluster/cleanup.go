package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dirPrefix starts the name of every cluster's directory, followed by the
// test binary's process ID, so that Start can tell whose it was.
const dirPrefix = "goodsched-testcluster-"

// live is what the running clusters of this test binary own: the process
// (group) IDs and the directories that SIGINT and SIGTERM clean up.
var live = &liveSet{pids: map[int]bool{}, dirs: map[string]bool{}}

type liveSet struct {
	mu    sync.Mutex
	pids  map[int]bool
	dirs  map[string]bool
	watch sync.Once
}

func (l *liveSet) add(pid int) {
	l.mu.Lock()
	l.pids[pid] = true
	l.mu.Unlock()
	l.watch.Do(l.watchSignals)
}

func (l *liveSet) remove(pid int) {
	l.mu.Lock()
	delete(l.pids, pid)
	l.mu.Unlock()
}

func (l *liveSet) addDir(dir string) {
	l.mu.Lock()
	l.dirs[dir] = true
	l.mu.Unlock()
	l.watch.Do(l.watchSignals)
}

func (l *liveSet) removeDir(dir string) {
	l.mu.Lock()
	delete(l.dirs, dir)
	l.mu.Unlock()
}

// watchSignals stops every cluster on SIGINT or SIGTERM, then lets the
// signal end the test binary as it would have.
func (l *liveSet) watchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		l.stopAll()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		time.Sleep(time.Second) // the signal ends the process; this is a fallback
		os.Exit(1)
	}()
}

// stopAll kills every process group, waits (up to 10 s) until each has
// been reaped, and removes the directories.
func (l *liveSet) stopAll() {
	l.mu.Lock()
	for pid := range l.pids {
		killGroup(pid)
	}
	l.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l.mu.Lock()
		n := len(l.pids)
		l.mu.Unlock()
		if n == 0 {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for dir := range l.dirs {
		_ = os.RemoveAll(dir)
	}
}

// killGroup kills the process group a process leads (SIGKILL).
func killGroup(pid int) {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// newDir makes the cluster's directory, removed when the test ends (after
// its processes are stopped), and first removes the ones dead test
// binaries left.
func newDir(t testing.TB) string {
	t.Helper()
	removeStaleDirs(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	live.addDir(dir)
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("testcluster: %v", err)
		}
		live.removeDir(dir)
	})
	return dir
}

// removeStaleDirs removes the cluster directories under parent whose test
// binary no longer runs.
func removeStaleDirs(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
