#!/usr/bin/env python3
"""A stdlib-only example agent for goodsched's scheduling environment.

It starts the environment (examples/env, a Go program) as a subprocess and
speaks its JSON-lines protocol: one request per line on the program's stdin,
one response per line on its stdout. The policy here is FIFO with backfill,
computed from the observation alone; played through the environment it gives
exactly the simulator's own FIFO result (test_agent.py checks that). Replace
`fifo` with a learned policy to train one.

    python3 examples/env/agent.py --seed 3 --env-args "-jobs 40 -cluster 8x4:t4"
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


def fifo(obs):
    """FIFO with backfill, as goodsched's scheduler.FIFO: running jobs keep
    their devices; waiting jobs, by priority (higher first), then arrival,
    then ID, start on their requested count where it fits, on the allowed
    type where their speedup is highest (their current type on ties)."""
    free = {t["type"]: t["usable"] for t in obs["types"]}
    jobs = sorted(obs["jobs"], key=lambda j: (not j.get("pinned", False), -j["priority"], j["submitted_s"], j["id"]))
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
    args = ap.parse_args(argv)
    env = Env(env_command(args.env_args, args.binary))
    try:
        ret, steps, result = play(env, args.seed)
    finally:
        env.close()
    print(json.dumps({"return": ret, "steps": steps, "result": result}))


if __name__ == "__main__":
    sys.exit(main())
