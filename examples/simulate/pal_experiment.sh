#!/bin/sh
# PAL's experiment (SC'24, Section IV.B): Sia's eight Philly workloads on
# 8x4 V100 with Longhorn's per-GPU variability, every placer under fifo and
# tiresias (LAS, the artifact's scheduler); prints per placer the geomean
# over the workloads of its average JCT over Packed-Sticky's.
#
# usage: examples/simulate/pal_experiment.sh [PENALTY [DATA]]
#   PENALTY  cross-node locality penalty (default 1.7, the artifact's)
#   DATA     a folder with sia/workloads/philly, sia/traces (Sia's artifact)
#            and variability (PAL's profiles.json and aggregated_data)
#            (default ../shared/data)
set -eu
pen=${1:-1.7}
data=${2:-../shared/data}
out=$(mktemp -d)
go build -o "$out/simulate" ./examples/simulate
for w in 1 2 3 4 5 6 7 8; do
  "$out/simulate" -json -out "" -cluster 8x4:v100-32gb -profiles "$data/sia/traces" \
    -workload "$data/sia/workloads/philly/workload-$w.csv" \
    -variability "${VARIABILITY:-$data/variability}" -locality-penalty "$pen" \
    -policies fifo,tiresias -placers packed-sticky,pm-first,pal,default >"$out/w$w.json" 2>/dev/null
done
python3 - "$out" "$pen" <<'PY'
import json, math, sys
out, pen = sys.argv[1], sys.argv[2]
jct = {}
for w in range(1, 9):
    for p in json.load(open(f"{out}/w{w}.json"))["policies"]:
        jct.setdefault(p["name"], []).append(p["avg_jct_s"])
for pol in ["fifo", "tiresias"]:
    base = jct[pol + "/packed-sticky"]
    for pl in ["pm-first", "pal", "default"]:
        r = math.exp(sum(math.log(a / b) for a, b in zip(jct[pol + "/" + pl], base)) / len(base))
        print(f"penalty {pen} {pol}/{pl}: geomean avg JCT {r:.3f}x packed-sticky ({(r - 1) * 100:+.1f}%)")
PY
rm -r "$out"
