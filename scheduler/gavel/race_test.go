//go:build race

package gavel

// raceEnabled shrinks the simplex-oracle instances under the race
// detector, which slows gonum's dense simplex about tenfold.
const raceEnabled = true
