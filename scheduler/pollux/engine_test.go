package pollux

import (
	"testing"
	"time"
)

func TestRestartFactor(t *testing.T) {
	cases := []struct {
		age      time.Duration
		restarts int
		want     float64
	}{
		{0, 0, 0},
		{30 * time.Second, 0, 0.5},
		{time.Hour, 1, (3600.0 - 30) / 3630},
		{60 * time.Second, 3, 0},
	}
	for _, c := range cases {
		if got := restartFactor(c.age, c.restarts, 30*time.Second); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("restartFactor(%v, %d) = %v, want %v", c.age, c.restarts, got, c.want)
		}
	}
}
