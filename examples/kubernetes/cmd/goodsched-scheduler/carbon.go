package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/live"
)

// carbonFlags are the flags of the carbon forecast the goodput-carbon
// policy plans delay-tolerant jobs with.
type carbonFlags struct {
	zone, providers            string
	emTokenFile, emURL         string
	wtUser, wtPasswordFile     string
	sdkURL                     string
	ttl, timeout, providerWait time.Duration
}

// register adds the carbon flags to fs.
func (f *carbonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.zone, "carbon-zone", "", "grid zone of the cluster's power, such as US-CAL-CISO, ES or NO (empty = no carbon forecast; the goodput-carbon policy then shifts nothing)")
	fs.StringVar(&f.providers, "carbon-providers", "", "comma-separated carbon-intensity services asked in order: electricitymaps, watttime, carbon-aware-sdk; the embedded 2022 history of US-CAL-CISO, ES and NO always answers last")
	fs.StringVar(&f.emTokenFile, "electricitymaps-token-file", "", "file holding the Electricity Maps API token (a mounted Secret)")
	fs.StringVar(&f.emURL, "electricitymaps-url", "", "root URL of the Electricity Maps API (empty = https://api.electricitymap.org)")
	fs.StringVar(&f.wtUser, "watttime-user", "", "WattTime user name")
	fs.StringVar(&f.wtPasswordFile, "watttime-password-file", "", "file holding the WattTime password (a mounted Secret)")
	fs.StringVar(&f.sdkURL, "carbon-aware-sdk-url", "", "root URL of a Carbon Aware SDK Web API deployment")
	fs.DurationVar(&f.ttl, "carbon-ttl", 5*time.Minute, "how long a fetched forecast is reused")
	fs.DurationVar(&f.providerWait, "carbon-provider-timeout", 5*time.Second, "time one service may take before the next is asked")
}

// secret reads a mounted secret file, trimmed.
func secret(flagName, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: -%s is required by -carbon-providers", errUsage, flagName)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("-%s: %w", flagName, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%w: -%s: %s is empty", errUsage, flagName, path)
	}
	return s, nil
}

// forecaster builds the chain the flags name, nil without -carbon-zone.
// Every service is wrapped in live.Counted (its own timeout, its panics
// and malformed answers turned into errors), the chain ends in the
// embedded history and a TTL cache fronts it.
func (f *carbonFlags) forecaster() (carbon.Forecaster, error) {
	if f.zone == "" {
		if strings.TrimSpace(f.providers) != "" {
			return nil, fmt.Errorf("%w: -carbon-providers needs -carbon-zone", errUsage)
		}
		return nil, nil
	}
	if f.ttl < 0 || f.providerWait < 0 {
		return nil, fmt.Errorf("%w: -carbon-ttl and -carbon-provider-timeout must not be negative", errUsage)
	}
	var chain carbon.Fallback
	seen := map[string]bool{}
	for _, name := range strings.Split(f.providers, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: -carbon-providers names %s twice", errUsage, name)
		}
		seen[name] = true
		var base carbon.Forecaster
		switch name {
		case "electricitymaps":
			tok, err := secret("electricitymaps-token-file", f.emTokenFile)
			if err != nil {
				return nil, err
			}
			base = &live.ElectricityMaps{Token: tok, BaseURL: f.emURL}
		case "watttime":
			if f.wtUser == "" {
				return nil, fmt.Errorf("%w: -watttime-user is required by -carbon-providers", errUsage)
			}
			pw, err := secret("watttime-password-file", f.wtPasswordFile)
			if err != nil {
				return nil, err
			}
			base = &live.WattTime{Username: f.wtUser, Password: pw}
		case "carbon-aware-sdk":
			if f.sdkURL == "" {
				return nil, fmt.Errorf("%w: -carbon-aware-sdk-url is required by -carbon-providers", errUsage)
			}
			base = &live.CarbonAwareSDK{BaseURL: f.sdkURL}
		default:
			return nil, fmt.Errorf("%w: -carbon-providers: unknown service %q (want electricitymaps, watttime or carbon-aware-sdk)", errUsage, name)
		}
		chain = append(chain, &live.Counted{Name: name, Base: base, Timeout: f.providerWait})
	}
	hist, err := live.Embedded(carbon.LifeCycle)
	if err != nil {
		return nil, err
	}
	if _, err := hist.Forecast(context.Background(), f.zone, time.Now(), time.Hour); err != nil && len(chain) == 0 {
		return nil, fmt.Errorf("%w: -carbon-zone %s: the embedded history has no such zone (US-CAL-CISO, ES, NO) and -carbon-providers names no service: %v", errUsage, f.zone, err)
	}
	chain = append(chain, &live.Counted{Name: "history", Base: hist})
	return &carbon.Cache{Base: chain, TTL: f.ttl}, nil
}
