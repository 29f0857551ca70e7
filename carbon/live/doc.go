// Package live fetches carbon intensity from live services and keeps a
// host's rounds supplied when they fail: clients for Electricity Maps (v3),
// WattTime (v3) and the Carbon Aware SDK Web API, each a carbon.Forecaster;
// Counted, which checks and counts what a provider returns; History, which
// answers any time from the embedded 2022 series of carbondata; and Replay,
// which serves forecasts as they were issued, for back-testing.
//
// A typical chain asks the live services in order, ends in History so that
// a round always has intensity, and caches the answer for a few minutes:
//
//	hist, err := live.Embedded(carbon.LifeCycle)
//	em := &live.Counted{Name: "electricitymaps", Base: &live.ElectricityMaps{Token: tok}, Timeout: 5 * time.Second}
//	f := &carbon.Cache{Base: carbon.Fallback{em, &live.Counted{Name: "history", Base: hist}}, TTL: 5 * time.Minute}
//
// Counted gives each provider its own timeout, so a slow service leaves
// the round time for the next; its Stats say how often each one failed.
// Round from down to the slot so that a round's calls share cache entries.
//
// Every client returns values in g/kWh with the Signal and Basis its
// service states: Electricity Maps is Average with the requested Basis;
// WattTime's co2_moer is Marginal, converted from lbs/MWh; the Carbon
// Aware SDK states neither, so its client's Signal field labels it. Do not
// chain average with marginal providers when the comparison matters.
//
// Clients make HTTP requests only when asked and never start goroutines.
// Errors wrap carbon.ErrUnavailable and one of this package's sentinels
// (ErrTransport, ErrStatus, ErrAuth) or carbon.ErrFormat for a malformed
// body, so a caller can tell why a provider failed.
//
// live imports carbon and carbon/carbondata only.
package live
