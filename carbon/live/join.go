package live

import (
	"errors"
	"fmt"

	"github.com/goodsched/goodsched/carbon"
)

func asStatus(err error, se **StatusError) bool { return err != nil && errors.As(err, se) }

// join returns a's intervals before b.Start followed by b: history
// completed by a forecast. They must share step, unit and signal, and a
// must reach b.Start.
func join(a, b carbon.Series) (carbon.Series, error) {
	if a.Step != b.Step || a.Unit != b.Unit || a.Signal != b.Signal {
		return carbon.Series{}, fmt.Errorf("%w: cannot join %v %s %s with %v %s %s", carbon.ErrIrregular, a.Step, a.Unit, a.Signal, b.Step, b.Unit, b.Signal)
	}
	if b.Start.Sub(a.Start)%a.Step != 0 || a.End().Before(b.Start) || !a.Start.Before(b.Start) {
		return carbon.Series{}, fmt.Errorf("%w: history [%v, %v) does not reach forecast start %v on its grid", carbon.ErrGap, a.Start, a.End(), b.Start)
	}
	n := int(b.Start.Sub(a.Start) / a.Step)
	out := b
	out.Start = a.Start
	out.Values = append(append([]float64(nil), a.Values[:n]...), b.Values...)
	if a.Estimated != nil || b.Estimated != nil {
		est := make([]bool, n+len(b.Values))
		if a.Estimated != nil {
			copy(est, a.Estimated[:n])
		}
		if b.Estimated != nil {
			copy(est[n:], b.Estimated)
		}
		out.Estimated = est
	}
	return out, out.Validate()
}
