//go:build !unix

package goodput

import "testing"

type cpuTimer struct{}

func startCPU(*testing.B) cpuTimer { return cpuTimer{} }
func (cpuTimer) stop()             {}
