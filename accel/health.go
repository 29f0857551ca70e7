package accel

import (
	"slices"
	"strconv"
)

// String returns "xid", "lost" or "recovered".
func (k HealthKind) String() string {
	switch k {
	case HealthXid:
		return "xid"
	case HealthLost:
		return "lost"
	case HealthRecovered:
		return "recovered"
	}
	return "HealthKind(" + strconv.Itoa(int(k)) + ")"
}

// criticalXids is sorted; see CriticalXids.
var criticalXids = []int{48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140}

// CriticalXids returns the Xid error codes that make a device unusable
// until it is reset, sorted:
//
//	48   double-bit ECC error
//	61   internal micro-controller breakpoint/warning
//	62   internal micro-controller halt
//	63   ECC page retirement or row-remapping recording event
//	64   ECC page retirement or row-remapping recording failure
//	74   NVLink error
//	79   GPU has fallen off the bus
//	92   high single-bit ECC error rate
//	94   contained ECC error
//	95   uncontained ECC error
//	119  GSP RPC timeout
//	120  GSP error
//	140  unrecovered ECC error
//
// Other Xids (for example 13, 31, 43, 45 and 68, which an application's own
// bug or exit raises) are reported but leave the device healthy.
func CriticalXids() []int { return slices.Clone(criticalXids) }

// CriticalXid reports whether the Xid is in CriticalXids.
func CriticalXid(xid int) bool {
	_, ok := slices.BinarySearch(criticalXids, xid)
	return ok
}
