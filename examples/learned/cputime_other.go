//go:build !unix

package main

import "time"

// cpuTime is unavailable here: 0, and env_cpu_steps_per_s is reported 0.
func cpuTime() time.Duration { return 0 }
