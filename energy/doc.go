// Package energy accounts the power, energy and emissions of a cluster's
// devices: a PowerModel gives each accelerator type's active and idle
// draw (the accel catalog's TDPs by default, measured NVML readings when
// asked) and the facility's PUE, the one place that setting lives; Account
// charges an interval in which some devices are busy and the rest idle,
// against a carbon-intensity series. It decides nothing: policies that
// plan with power (scheduler/carbonaware) and simulators that report it
// (scheduler/sim) read it. It imports accel, carbon and placement only.
package energy
