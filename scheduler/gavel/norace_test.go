//go:build !race

package gavel

const raceEnabled = false
