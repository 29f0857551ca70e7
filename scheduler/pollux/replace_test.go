package pollux

import "testing"

// TestReplaceShortcutMatchesFull: probing with the re-place shortcut
// (replaceFails) answers every probe as re-placing the job does and
// leaves the state exactly as it does (slots, bins and the order of every
// bucket), through random probes, moves, undos, clones and resets on
// crowded clusters (movesMatch).
func TestReplaceShortcutMatchesFull(t *testing.T) {
	taken := 0 // probes the shortcut answered
	for seed := range uint64(80) {
		p := crowdedProblem(t, seed, 500)
		short, full := twin(t, p)
		full.fullReplace = true
		movesMatch(t, seed, p, short, full, true) // growths: the probes that may re-place
		taken += short.shortcuts
	}
	// The comparison means something only if the shortcut is taken.
	if taken < 100 {
		t.Fatalf("the shortcut answered %d probes: the instances do not exercise it", taken)
	}
	t.Logf("the shortcut answered %d probes", taken)
}

// TestReplaceShortcutSameSearch: the whole search gives the same
// solutions and layouts with and without the shortcut.
func TestReplaceShortcutSameSearch(t *testing.T) {
	for seed := range uint64(60) {
		p := wideProblem(t, 2000+seed)
		if seed%2 == 1 {
			p = randomPolishProblem(t, 100+seed)
		}
		short := solveOnce(t, p, nil)
		if full := solveOnce(t, p, func(e *Search) { e.fullReplace = true }); short != full {
			t.Fatalf("seed %d: with the shortcut\n%s\nre-placing\n%s", seed, short, full)
		}
	}
}
