package carbondata_test

import (
	"fmt"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/carbondata"
)

// Example reads California's 2022 series and reports its span.
func Example() {
	f, err := carbondata.FS.Open(carbondata.California2022)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	s, err := carbon.Read(f, carbon.ReadOptions{Basis: carbon.Direct})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Zone, s.Start.Format("2006-01-02"), len(s.Values), "hours of", s.Unit)
	// Output:
	// US-CAL-CISO 2022-01-01 8760 hours of gCO2eq/kWh
}
