"""Tests of goodsched_client; stdlib only (python3 -m unittest)."""

import http.server
import json
import os
import ssl
import tempfile
import threading
import unittest

import goodsched_client as gc

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "testdata")


class GradientNoiseScaleTest(unittest.TestCase):
    def test_matches_go_noise_scale(self):
        # The same steps through goodput.NoiseScale (Go) give these values.
        want = [
            (0.5, 0.5),
            (0.56670001111110702, 0.96690007777774956),
            (0.34866721453917549, 0.90408755708799715),
            (0.42859333606702765, 0.75726517905626178),
        ]
        ns = gc.GradientNoiseScale()
        self.assertIsNone(ns.stats())
        for (local, total, count, scale), (sqr, var) in zip(
            [(2.5, 1.0, 4, 1), (3.0, 1.2, 4, 2), (1.9, 0.4, 8, 4), (0.9, 0.85, 2, 1.5)], want
        ):
            ns.update(local, total, count, scale)
            got = ns.stats()
            self.assertAlmostEqual(got[0], sqr, places=12)
            self.assertAlmostEqual(got[1], var, places=12)

    def test_two_batch_estimator_recovers_signal_and_noise(self):
        # Four gradients g_i = g + noise_i, each at batch M0 (so the step's
        # total batch is 4 * M0, scale 4), with |g|^2 = 2 and noise variance
        # 0.5 per coordinate: the estimates approach sqr = 2 and
        # var = tr(Sigma at M0) = 4 coordinates * 0.5 = 2.
        import random

        rnd = random.Random(7)
        g = [1.0, -0.5, 0.5, 0.70710678]
        ns = gc.GradientNoiseScale(theta=0.99)
        for _ in range(4000):
            grads = [[x + rnd.gauss(0, 0.5 ** 0.5) for x in g] for _ in range(4)]
            ns.update_from_vectors(grads, scale=4.0)
        sqr, var = ns.stats()
        self.assertAlmostEqual(sqr, sum(x * x for x in g), delta=0.25)
        self.assertAlmostEqual(var, 2.0, delta=0.25)

    def test_floors_and_errors(self):
        ns = gc.GradientNoiseScale()
        ns.update(1.0, 1.0, 2, 1.0)  # identical gradients: no noise
        sqr, var = ns.stats()
        self.assertEqual(var, 1e-6)
        self.assertEqual(sqr, 1.0)
        for args in [(1.0, 1.0, 1, 1.0), (float("nan"), 1.0, 2, 1.0), (1.0, -1.0, 2, 1.0), (1.0, 1.0, 2, 0)]:
            with self.assertRaises(ValueError):
                ns.update(*args)
        ns.reset()
        self.assertIsNone(ns.stats())

    def test_differenced(self):
        a, b = gc.GradientNoiseScale(), gc.GradientNoiseScale()
        a.update_differenced(2.0, 3.0, 1.5, 1.0)
        b.update(2.5, 1.5, 2, 1.0)
        self.assertEqual(a.stats(), b.stats())


class MeterTest(unittest.TestCase):
    def test_take_aggregates_per_shape(self):
        t = [0.0]
        m = gc.Meter(clock=lambda: t[0])
        s1, s2 = (1, 2, 64, 0), (1, 2, 64, 1)
        m.optim(s1, 0.1, sync_seconds=0.01)
        m.optim(s1, 0.3, sync_seconds=0.03)
        with m.time(s2, optim=False):
            t[0] += 0.05
        with m.time(s2):
            t[0] += 0.07
        m.accum((4, 4, 1, 0), 0.2)  # no optimizer step yet: kept
        got = m.take()
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0]["count"], 2)
        self.assertAlmostEqual(got[0]["optim_seconds"], 0.2)
        self.assertAlmostEqual(got[0]["sync_seconds"], 0.02)
        self.assertNotIn("accum_count", got[0])
        self.assertEqual(got[1]["accum"], 1)
        self.assertEqual(got[1]["accum_count"], 1)
        self.assertAlmostEqual(got[1]["accum_seconds"], 0.05)
        self.assertAlmostEqual(got[1]["optim_seconds"], 0.07)
        self.assertEqual(m.take(), [])
        m.optim((4, 4, 1, 0), 0.3)
        self.assertEqual(m.take()[0]["accum_count"], 1)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        srv = self.server
        body = self.rfile.read(int(self.headers["Content-Length"]))
        srv.requests.append((self.path, self.headers.get("Authorization"), json.loads(body)))
        code, payload = srv.answers.pop(0) if srv.answers else srv.answer
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.srv.requests = []
        self.srv.answer = (200, {})
        self.srv.answers = []
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(TESTDATA, "server.crt"), os.path.join(TESTDATA, "server.key"))
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()
        self.dir = tempfile.TemporaryDirectory()
        self.token = os.path.join(self.dir.name, "token")
        with open(self.token, "w") as f:
            f.write("tok-1\n")
        url = "https://127.0.0.1:%d" % self.srv.server_address[1]
        self.client = gc.Client(url, "ml/a", token_file=self.token, ca_file=os.path.join(TESTDATA, "ca.crt"))

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()
        self.dir.cleanup()

    def test_report_over_https(self):
        self.srv.answer = (200, {"plan": {"batch": 512, "local": 128, "accum": 1, "goodput": 900.5},
                                 "replicas": 2, "nodes": 1, "adaptive": True, "observations": 3})
        limits = gc.Limits(128, max_batch=4096, min_local=32, max_local=1024, accumulation=True)
        resp = self.client.report(limits=limits, steps=[{"nodes": 1, "replicas": 1, "local": 128, "accum": 0,
                                                         "count": 5, "optim_seconds": 0.1}],
                                  grad=(0.5, 20.0), current=gc.Plan(128, 128, 0))
        self.assertEqual(resp.plan, gc.Plan(512, 128, 1, 900.5))
        self.assertEqual((resp.replicas, resp.nodes, resp.adaptive, resp.observations), (2, 1, True, 3))
        path, auth, body = self.srv.requests[0]
        self.assertEqual(path, "/v1/report")
        self.assertEqual(auth, "Bearer tok-1")
        self.assertEqual(body["job"], "ml/a")
        self.assertEqual(body["limits"], {"init_batch": 128, "max_batch": 4096, "min_local": 32,
                                          "max_local": 1024, "accumulation": True})
        self.assertEqual(body["grad"], {"sqr": 0.5, "var": 20.0})
        self.assertEqual(body["current"]["local"], 128)
        # A rotated token is read on the next report.
        with open(self.token, "w") as f:
            f.write("tok-2")
        self.client.report()
        self.assertEqual(self.srv.requests[1][1], "Bearer tok-2")
        self.assertEqual(self.srv.requests[1][2], {"job": "ml/a"})

    def test_reconfigure(self):
        self.srv.answer = (200, {"replicas": 4, "reconfigure": {"verdict": "expand", "to": 8, "reason": "4 t4 devices free"}})
        rc = self.client.reconfigure()
        self.assertEqual((rc.verdict, rc.to), ("expand", 8))
        self.assertIn("free", rc.reason)
        self.assertEqual(self.srv.requests[0][2], {"job": "ml/a", "reconfigure": True})
        # A scheduler that does not answer, or answers nonsense.
        for answer in ({"replicas": 4}, {"reconfigure": {"verdict": "grow", "to": 8}}, {"reconfigure": [1]}):
            self.srv.answer = (200, answer)
            with self.assertRaises(gc.BadResponse):
                self.client.reconfigure()

    def test_refusal_raises_with_code(self):
        self.srv.answer = (403, "report: forbidden: pod ml/b-0 is not a pod of job ml/a\n")
        with self.assertRaises(gc.ReportError) as cm:
            self.client.report()
        self.assertEqual(cm.exception.code, 403)
        self.assertIn("not a pod of job", str(cm.exception))

    def test_non_leader_is_retried(self):
        # Two 503s (replicas that do not lead), then the leader's answer.
        self.srv.answers = [(503, "not the leader"), (503, "not the leader")]
        self.srv.answer = (200, {"replicas": 4})
        self.assertEqual(self.client.report().replicas, 4)
        self.assertEqual(len(self.srv.requests), 3)
        # No leader at all: the 503 is raised after LEADER_TRIES posts.
        self.srv.requests, self.srv.answer = [], (503, "not the leader")
        with self.assertRaises(gc.ReportError) as cm:
            self.client.report()
        self.assertEqual(cm.exception.code, 503)
        self.assertEqual(len(self.srv.requests), gc.LEADER_TRIES)

    def test_meter_keys_stay_local(self):
        m = gc.Meter()
        m.optim((1, 1, 64, 0), 0.1, sync_seconds=0.01)
        self.client.report(steps=m.take())
        sent = self.srv.requests[0][2]["steps"][0]
        self.assertNotIn("_sync_count", sent)
        self.assertAlmostEqual(sent["sync_seconds"], 0.01)

    def test_untrusted_certificate_is_rejected(self):
        url = "https://127.0.0.1:%d" % self.srv.server_address[1]
        ctx = ssl.create_default_context()  # system roots: the test CA is not among them
        import urllib.request

        c = gc.Client(url, "ml/a", token_file=self.token,
                      opener=urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx)))
        with self.assertRaises(Exception):
            c.report()
        self.assertEqual(self.srv.requests, [])

    def test_malformed_answers_raise_bad_response(self):
        self.srv.answers = [(200, "{not json"), (200, "[1]"), (200, {"plan": {"batch": "x"}}), (200, {"plan": [1]})]
        for _ in range(4):
            with self.assertRaises(gc.BadResponse):
                self.client.report(limits=gc.Limits(128))
        self.assertEqual(len(self.srv.requests), 4)  # delivered once each: not retried

    def test_error_goes_with_the_report(self):
        self.client.report(error="x" * 5000)
        self.assertEqual(self.srv.requests[0][2]["error"], "x" * gc.MAX_ERROR_CHARS)

    def test_bad_config(self):
        with self.assertRaises(ValueError):
            gc.Client("", "ml/a", ca_file=os.path.join(TESTDATA, "ca.crt"))
        with self.assertRaises(ValueError):
            gc.Client("https://x", "a", ca_file=os.path.join(TESTDATA, "ca.crt"))


try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


class FakeClient:
    def __init__(self, responses):
        self.responses = list(responses)
        self.calls = []

    def report(self, **kw):
        self.calls.append(kw)
        r = self.responses.pop(0)
        if isinstance(r, Exception):
            raise r
        return gc.Response(r)


class LoopTest(unittest.TestCase):
    def test_reports_every_period_and_follows_plan(self):
        now = [0.0]
        fc = FakeClient([
            {"plan": {}, "replicas": 0},
            {"plan": {"batch": 1024, "local": 256, "accum": 1, "goodput": 1.0}, "replicas": 2},
            {"plan": {"batch": 2048, "local": 256, "accum": 1}, "replicas": 4},
        ])
        limits = gc.Limits(128, max_batch=4096, min_local=32, max_local=256, accumulation=True)
        loop = gc.Loop(fc, limits, nodes=1, replicas=2, period_s=30, clock=lambda: now[0])
        self.assertEqual(loop.plan, gc.Plan(128, 64, 0))
        loop.meter.optim(loop.shape(), 0.1)
        self.assertEqual(loop.maybe_report(), gc.Plan(128, 64, 0))  # first call reports; no plan yet
        self.assertEqual(fc.calls[0]["steps"][0]["local"], 64)
        self.assertIs(fc.calls[0]["limits"], limits)
        now[0] = 10
        loop.maybe_report()
        self.assertEqual(len(fc.calls), 1)  # within the period: no report
        now[0] = 31
        self.assertEqual(loop.maybe_report(), gc.Plan(1024, 256, 1, 1.0))
        self.assertEqual(loop.shape(), (1, 2, 256, 1))
        # A plan for another replica count waits until the job is resized.
        now[0] = 62
        self.assertEqual(loop.maybe_report(), gc.Plan(1024, 256, 1, 1.0))
        self.assertEqual(fc.calls[2]["current"], gc.Plan(1024, 256, 1, 1.0))

    def test_failed_report_keeps_measurements(self):
        now = [0.0]
        fc = FakeClient([gc.ReportError(503, "not the leader"), OSError("connection refused"),
                         {"plan": {"batch": 256, "local": 128, "accum": 0}, "replicas": 2}])
        limits = gc.Limits(128, max_batch=4096, min_local=32, max_local=256)
        loop = gc.Loop(fc, limits, nodes=1, replicas=2, period_s=30, clock=lambda: now[0])
        loop.meter.optim(loop.shape(), 0.1, sync_seconds=0.02)
        self.assertEqual(loop.maybe_report(), gc.Plan(128, 64, 0))  # refused: the plan stays
        self.assertIsInstance(loop.last_error, gc.ReportError)
        loop.meter.optim(loop.shape(), 0.3, sync_seconds=0.04)
        now[0] = 31
        loop.maybe_report()  # the network fails: still nothing lost
        now[0] = 62
        self.assertEqual(loop.maybe_report(), gc.Plan(256, 128, 0))
        self.assertIsNone(loop.last_error)
        steps = fc.calls[2]["steps"]
        self.assertEqual(len(steps), 1)
        self.assertEqual(steps[0]["count"], 2)
        self.assertAlmostEqual(steps[0]["optim_seconds"], 0.2)
        self.assertAlmostEqual(steps[0]["sync_seconds"], 0.03)

    def test_bad_answers_keep_the_plan(self):
        # The trainer's bad-input contract: refusals (401, 403, 413, 429,
        # 503 after the client's retries), a malformed answer, a malformed
        # plan and a plan the data loader cannot reach all keep the
        # current plan; the last two are reported with the next report.
        now = [0.0]
        good = {"plan": {"batch": 256, "local": 128, "accum": 0}, "replicas": 2}
        fc = FakeClient([gc.ReportError(c, "no") for c in (401, 403, 413, 429, 503)] + [
            gc.BadResponse("malformed"),
            {"plan": {"batch": 999, "local": 3, "accum": 0}, "replicas": 2},
            {"plan": {"batch": 4096, "local": 2048, "accum": 0}, "replicas": 2},
            gc.ReportError(429, "slow down"),
            good,
        ])
        limits = gc.Limits(128, max_batch=8192, min_local=32, max_local=4096)

        def check(plan):
            return "global batch %d is over the 1437 samples" % plan.batch if plan.batch > 1437 else None

        loop = gc.Loop(fc, limits, nodes=1, replicas=2, period_s=1, clock=lambda: now[0], check=check)
        start = loop.plan
        for i in range(9):
            loop.meter.optim(loop.shape(), 0.1)
            now[0] += 1
            self.assertEqual(loop.maybe_report(), start, "answer %d" % i)
            self.assertIsNotNone(loop.last_error)
        calls = fc.calls
        self.assertNotIn("error", [k for k, v in calls[6].items() if v])
        self.assertIn("999", calls[7]["error"])  # the inconsistent plan, reported next
        self.assertIn("global batch 4096", calls[8]["error"])
        # The refused report keeps the error for the one after it.
        now[0] += 1
        self.assertEqual(loop.maybe_report(), gc.Plan(256, 128, 0))
        self.assertIn("global batch 4096", calls[9]["error"])
        # Measurements: the refused reports' steps went with the next
        # report; the malformed answer's report was stored, not resent.
        self.assertEqual(calls[5]["steps"][0]["count"], 6)
        self.assertEqual(calls[6]["steps"][0]["count"], 1)

    @unittest.skipUnless(HAVE_TORCH, "needs torch")
    def test_rank_zero_reports_and_broadcasts(self):
        class FakeDist:
            def __init__(self, rank, plan):
                self.rank, self.plan = rank, plan

            def get_world_size(self):
                return 2

            def get_rank(self):
                return self.rank

            def get_backend(self):
                return "gloo"

            def broadcast(self, t, src):
                if self.rank != src:
                    t.copy_(torch.tensor(self.plan, dtype=torch.float64))

        limits = gc.Limits(128, max_batch=4096, min_local=32, max_local=256)
        fc = FakeClient([])
        loop = gc.Loop(fc, limits, replicas=2, dist=FakeDist(1, [512, 256, 0, 3.5]))
        self.assertEqual(loop.maybe_report(), gc.Plan(512, 256, 0, 3.5))
        self.assertEqual(fc.calls, [])  # only rank 0 reports
        fc0 = FakeClient([{"plan": {"batch": 256, "local": 128, "accum": 0}, "replicas": 2}])
        loop0 = gc.Loop(fc0, limits, replicas=2, dist=FakeDist(0, None))
        self.assertEqual(loop0.maybe_report(), gc.Plan(256, 128, 0))
        self.assertEqual(len(fc0.calls), 1)


if __name__ == "__main__":
    unittest.main()
