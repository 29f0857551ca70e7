#!/usr/bin/env python3
"""A stdlib-only example agent for goodsched's scheduling environment.

It starts the environment (examples/env, a Go program) as a subprocess and
speaks its JSON-lines protocol: one request per line on the program's stdin,
one response per line on its stdout. The policy here is FIFO with backfill,
computed from the observation alone; played through the environment it gives
exactly the simulator's own FIFO result (test_agent.py checks that). `train`
tunes a priority agent (a linear score over a few features of each waiting
job) by the cross-entropy method, episode after episode: a minimal example of
training against the environment; replace it with your learner.

    python3 examples/env/agent.py --seed 3 --env-args "-jobs 40 -cluster 8x4:t4"
    python3 examples/env/agent.py --train 3 --env-args "-jobs 40 -cluster 8x4:t4"
"""

import argparse
import json
import os
import shlex
import subprocess
import sys

VERSION = 1
SCHEMA = "goodsched.env/v1"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class EnvError(Exception):
    """An error response: code is version, malformed, bad_action, no_episode,
    episode or invalid. The episode is as it was before the request (except
    for episode, which ends it)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Env:
    """A client of the environment program started with `command`."""

    def __init__(self, command):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
        )

    def send_line(self, line):
        """Sends one raw line and returns the parsed response."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        if not out:
            raise EOFError("the environment closed its output")
        resp = json.loads(out)
        if resp.get("version") != VERSION:
            raise EnvError("version", f"response version {resp.get('version')}, this agent speaks {VERSION}")
        if resp.get("error"):
            raise EnvError(resp["error"]["code"], resp["error"]["message"])
        return resp

    def _call(self, request):
        request = dict(request, version=VERSION)
        return self.send_line(json.dumps(request, separators=(",", ":")))

    def reset(self, seed):
        """Starts an episode; returns its first observation."""
        obs = self._call({"op": "reset", "seed": seed})["observation"]
        if obs.get("schema") != SCHEMA:
            raise EnvError("version", f"observation schema {obs.get('schema')}, this agent speaks {SCHEMA}")
        return obs

    def step(self, targets):
        """Applies targets ([{"job", "type", "count"}]); returns
        (observation, reward, done, result summary or None)."""
        resp = self._call({"op": "step", "action": {"targets": targets}})
        return resp["observation"], resp["reward"], resp["done"], resp.get("result")

    def close(self):
        if self.proc.poll() is None:
            try:
                self._call({"op": "close"})
            except (EOFError, BrokenPipeError, EnvError):
                pass
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.proc.stdout.close()


def fifo(obs, keep_order=False):
    """FIFO with backfill, as goodsched's scheduler.FIFO: running jobs keep
    their devices; waiting jobs, by priority (higher first), then arrival,
    then ID, start on their requested count where it fits, on the allowed
    type where their speedup is highest (their current type on ties).
    keep_order takes the jobs in the observation's order instead."""
    free = {t["type"]: t["usable"] for t in obs["types"]}
    jobs = obs["jobs"]
    if not keep_order:
        jobs = sorted(jobs, key=lambda j: (not j.get("pinned", False), -j["priority"], j["submitted_s"], j["id"]))
    targets, kept = [], set()
    for j in jobs:
        allowed = [s["type"] for s in j["speedups"]]
        running = j["count"] > 0
        if j.get("pinned") or (running and j["min"] <= j["count"] <= j["max"] and j["type"] in allowed):
            free[j["type"]] -= j["count"]
            targets.append({"job": j["id"], "type": j["type"], "count": j["count"]})
            kept.add(j["id"])
    for j in jobs:
        if j["id"] in kept:
            continue
        want = j["requested"]
        if j["kind"] != "rigid":
            want = min(max(want, j["min"]), j["max"])
        allowed = [s["type"] for s in j["speedups"]]
        choice = None
        if j["count"] == want and j.get("type") in allowed and free[j["type"]] >= want:
            choice = j["type"]
        else:
            best_v = 0.0
            for s in j["speedups"]:
                t = s["type"]
                k = want - s["from"]
                if free[t] < want or not 0 <= k < len(s["values"]):
                    continue
                v = s["values"][k]
                if choice is None or v > best_v * (1 + 1e-12) or (t == j.get("type") and v >= best_v * (1 - 1e-12)):
                    choice, best_v = t, v
        if choice is not None:
            free[choice] -= want
            targets.append({"job": j["id"], "type": choice, "count": want})
    return targets


FEATURES = ("age_h", "requested_share", "speedup_per_device", "attained_h")


def features(job, obs):
    """The features a priority agent scores a waiting job by."""
    usable = max(1, sum(t["usable"] for t in obs["types"]))
    best = max((max(s["values"]) / max(1, s["from"] + len(s["values"]) - 1) for s in job["speedups"] if s["values"]), default=0.0)
    return (job["age_s"] / 3600, job["requested"] / usable, best, job["attained_s"] / 3600)


def priority(weights):
    """A policy like fifo, but waiting jobs start in the order of their
    score, the dot product of weights and features(job) (highest first):
    what train() tunes. weights (1, 0, 0, 0) orders by age, as FIFO does."""

    def policy(obs):
        def key(j):
            return (not j.get("pinned", False), -sum(w * f for w, f in zip(weights, features(j, obs))), j["id"])

        reordered = dict(obs, jobs=sorted(obs["jobs"], key=key))
        return fifo(reordered, keep_order=True)

    return policy


def train(env, seeds, iterations=3, population=6, elite=2, rng=None):
    """Tunes a priority agent's weights by the cross-entropy method: each
    iteration plays every seed with the best weights so far and with
    population - 1 weight vectors drawn around the mean of the last elite,
    and moves the mean to the `elite` best by mean return. Returns the best
    weights found and the best mean return after each iteration (which
    never falls)."""
    import random

    rng = rng or random.Random(1)
    mean, spread = [1.0, 0.0, 0.0, 0.0], [1.0] * len(FEATURES)
    best = None  # (mean return, weights)
    history = []
    for _ in range(iterations):
        candidates = [best[1] if best else mean]
        candidates += [[rng.gauss(m, s) for m, s in zip(mean, spread)] for _ in range(population - 1)]
        scored = []
        for w in candidates:
            ret = sum(play(env, seed, priority(w))[0] for seed in seeds) / len(seeds)
            scored.append((ret, w))
        scored.sort(key=lambda x: -x[0])
        if best is None or scored[0][0] > best[0]:
            best = scored[0]
        top = [w for _, w in scored[:elite]]
        mean = [sum(ws) / len(top) for ws in zip(*top)]
        spread = [max(0.05, (sum((x - m) ** 2 for x in ws) / len(top)) ** 0.5) for ws, m in zip(zip(*top), mean)]
        history.append(best[0])
    return best[1], history


def play(env, seed, policy=fifo):
    """Plays one episode; returns (return, steps, result summary)."""
    obs = env.reset(seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, done, result = env.step(policy(obs))
        total += reward
        steps += 1
        if done:
            return total, steps, result


def env_command(env_args="", binary=None):
    """The command that starts the environment: a built binary, or go run."""
    base = [binary] if binary else ["go", "run", "./examples/env"]
    return base + shlex.split(env_args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="episode seed")
    ap.add_argument("--env-args", default="", help="flags for examples/env, such as '-jobs 40 -cluster 8x4:t4'")
    ap.add_argument("--binary", default=None, help="a built examples/env binary (default: go run)")
    ap.add_argument("--train", type=int, default=0, help="tune a priority agent for this many iterations on seeds 0..3 first")
    args = ap.parse_args(argv)
    env = Env(env_command(args.env_args, args.binary))
    try:
        policy, out = fifo, {}
        if args.train > 0:
            weights, history = train(env, seeds=[0, 1, 2, 3], iterations=args.train)
            policy, out = priority(weights), {"weights": dict(zip(FEATURES, weights)), "best_return_per_iteration": history}
        ret, steps, result = play(env, args.seed, policy)
    finally:
        env.close()
    out.update({"return": ret, "steps": steps, "result": result})
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
