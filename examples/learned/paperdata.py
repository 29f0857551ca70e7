#!/usr/bin/python3
"""Convert the test states of Hitzges & Sagnol's repository to JSON lines.

Usage (Debian's python3-numpy is needed to read the pickles):
    apt-get install -y python3-numpy
    git show HEAD:Data/DataSet_99/LSTM_Data_RR_99/5-jobs-4-machines_99.pickle > s.pickle   # in a clone of
        # github.com/DiegoHitzges/Deep-Learning-for-Unrelated-Machines-Scheduling
    /usr/bin/python3 examples/learned/paperdata.py 500 s.pickle ... > paper.jsonl
    go run ./examples/learned -paper paper.jsonl

Each pickle holds [[inputs], [targets]]: inputs[s, j] is, for pending job j
of state s, the processing time, remaining occupation, time to deadline and
weight/10 of every active machine (the free machine first), then the job's
time to deadline and weight/10; targets[s] is Qmin/Q for each job (rows'
order) and, last, for retiring the free machine. One line per state:
{"jobs": [{"p": [...], "d": x, "w": x}], "machines": [{"busy": x, "d": x,
"w": x}], "target": [...]}. The first argument caps states per file.
"""
import json
import pickle
import sys

limit = int(sys.argv[1])
for path in sys.argv[2:]:
    with open(path, "rb") as f:
        data = pickle.load(f)
    inputs, targets = data[0][0], data[1][0]
    for s in range(min(limit, inputs.shape[0])):
        x = inputs[s]
        m = (x.shape[1] - 2) // 4
        machines = [{"busy": float(x[0, 4 * k + 1]), "d": float(x[0, 4 * k + 2]), "w": round(float(x[0, 4 * k + 3]) * 10)} for k in range(m)]
        jobs = [{"p": [float(row[4 * k]) for k in range(m)], "d": float(row[4 * m]), "w": round(float(row[4 * m + 1]) * 10)} for row in x]
        print(json.dumps({"jobs": jobs, "machines": machines, "target": [float(v) for v in targets[s]]}))
