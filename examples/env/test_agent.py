"""Tests of the example agent against the environment program.

Run from the repository root (.ci/run does):

    python3 -m unittest discover -s examples/env -v

They build examples/env with `go build`; without Go they skip, except under
CI=true, where they fail.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import agent

ENV_ARGS = "-jobs 40 -cluster 8x4:t4"


BINARY = None
_TMP = None


def setUpModule():
    global BINARY, _TMP
    if shutil.which("go") is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("go is not on PATH: the environment cannot be built")
        raise unittest.SkipTest("go is not on PATH: install Go to build examples/env")
    _TMP = tempfile.mkdtemp()
    BINARY = os.path.join(_TMP, "env")
    subprocess.run(["go", "build", "-o", BINARY, "./examples/env"], cwd=agent.REPO, check=True)


def tearDownModule():
    if _TMP:
        shutil.rmtree(_TMP, ignore_errors=True)


class AgentTest(unittest.TestCase):
    def env(self):
        e = agent.Env(agent.env_command(ENV_ARGS, BINARY))
        self.addCleanup(e.close)
        return e

    def reference(self, seed):
        out = subprocess.run(
            [BINARY, "-reference", "fifo", "-seed", str(seed)] + ENV_ARGS.split(),
            cwd=agent.REPO, check=True, capture_output=True, text=True,
        ).stdout
        return json.loads(out)

    def test_fifo_matches_simulator(self):
        """FIFO from the observation alone, through the protocol, gives
        exactly the simulator's own FIFO result, on two workloads."""
        e = self.env()
        for seed in (0, 5):
            ret, steps, result = agent.play(e, seed)
            self.assertEqual(result, self.reference(seed))
            self.assertEqual(result["completed"], 40)
            # The JCT return is minus the sum of JCTs, in hours.
            self.assertAlmostEqual(ret, -result["avg_jct_s"] * 40 / 3600, places=6)
            self.assertEqual(steps, result["steps"])

    def test_same_seed_same_episode(self):
        e = self.env()
        runs = []
        for _ in range(2):
            obs = e.reset(3)
            lines = [json.dumps(obs, sort_keys=True)]
            for _ in range(20):
                obs, reward, done, _ = e.step(agent.fifo(obs))
                lines.append(json.dumps([obs, reward, done], sort_keys=True))
            runs.append(lines)
        self.assertEqual(runs[0], runs[1])

    def test_errors_leave_the_episode_unchanged(self):
        e = self.env()
        with self.assertRaises(agent.EnvError) as cm:
            e.step([])
        self.assertEqual(cm.exception.code, "no_episode")
        obs = e.reset(1)
        for line, code in [
            ('{"version":2,"op":"step","action":{"targets":[]}}', "version"),
            ("{not json", "malformed"),
            ('{"version":1,"op":"step","action":{"targets":[{"job":"ghost","type":"t4","count":1}]}}', "bad_action"),
        ]:
            with self.assertRaises(agent.EnvError) as cm:
                e.send_line(line)
            self.assertEqual(cm.exception.code, code, line)
        job = obs["jobs"][0]
        with self.assertRaises(agent.EnvError) as cm:
            e.step([{"job": job["id"], "type": "t4", "count": 33}])
        self.assertEqual(cm.exception.code, "bad_action")
        # The episode goes on as if none of that had happened.
        got = e.step(agent.fifo(obs))
        fresh = self.env()
        want = fresh.step(agent.fifo(fresh.reset(1)))
        self.assertEqual(got, want)


class TrainTest(unittest.TestCase):
    def test_priority_agent_trains(self):
        """The priority agent with FIFO's weights is FIFO; training runs
        episodes and never ends below its starting point (the mean is one
        of the population)."""
        e = agent.Env(agent.env_command("-jobs 15 -cluster 4x4:t4", BINARY))
        self.addCleanup(e.close)
        fifo_ret = agent.play(e, 0)[0]
        self.assertEqual(agent.play(e, 0, agent.priority([1.0, 0.0, 0.0, 0.0]))[0], fifo_ret)
        weights, history = agent.train(e, seeds=[0], iterations=2, population=3, elite=1)
        self.assertEqual(len(weights), len(agent.FEATURES))
        self.assertGreaterEqual(history[0], fifo_ret - 1e-9)
        self.assertGreaterEqual(history[-1], history[0] - 1e-9)



if __name__ == "__main__":
    unittest.main()
