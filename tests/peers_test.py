#!/usr/bin/env python3
"""peers_test.py: the parts of bench/peers.py that need no GPU or torch: task.json expressions and
distributions, every L1 and L2 task's bench arguments, the argument layout each PyTorch peer
assumes held against task.json, temper's numbers and the table. The torch side runs only on the
GPU machine (bench/gpu.sh peers); its one test here is skipped where torch is missing.

  python3 tests/peers_test.py SOURCE_DIR"""
import copy
import json
import os
import sys
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SOURCE, "bench"))
import peers  # noqa: E402

TASKS = os.path.join(SOURCE, "tasks")


class Expressions(unittest.TestCase):
    def test_arithmetic(self):
        env = {"R": 7, "C": 3}
        self.assertEqual(peers.eval_expr("R*C + 1", env), 22)
        self.assertEqual(peers.eval_expr("ceil_div(R, C)", env), 3)
        self.assertEqual(peers.eval_expr("min(R, C) * max(R, C)", env), 21)
        self.assertEqual(peers.eval_expr("-R / 2", env), -3)  # truncates toward zero
        self.assertEqual(peers.eval_expr("-R % 2", env), -1)
        self.assertEqual(peers.eval_expr("R > C && !(R == C)", env), 1)
        self.assertEqual(peers.eval_expr(4, env), 4)

    def test_errors(self):
        with self.assertRaises(ValueError):
            peers.eval_expr("R * Q", {"R": 1})
        with self.assertRaises(ValueError):
            peers.eval_expr("R / 0", {"R": 1})
        with self.assertRaises(ValueError):
            peers.eval_expr("pow(R, 2)", {"R": 1})


class Distributions(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(peers.parse_init("normal(0.5,1)", "bf16"), ("normal", 0.5, 1.0))
        self.assertEqual(peers.parse_init("uniform(0,0.00048828125)", "f32"), ("uniform", 0.0, 0.00048828125))
        self.assertEqual(peers.parse_init("randint(-127, 127)", "i8"), ("randint", -127, 127))
        self.assertEqual(peers.parse_init(None, "f32"), ("normal", 0.0, 1.0))
        self.assertEqual(peers.parse_init(None, "u8"), ("randint", -100, 100))

    def test_bad(self):
        for text in ("gauss(0,1)", "normal(0)", "randint(a,b)"):
            with self.assertRaises(ValueError):
                peers.parse_init(text, "f32")


class Tasks(unittest.TestCase):
    def test_every_task_parses(self):
        paths = peers.tasks_in(TASKS)
        self.assertGreaterEqual(len(paths), 21)
        for path in paths:
            task = peers.load_task(path)
            args, sizes = peers.bench_args(task)
            self.assertEqual([a["name"] for a in args], [a["name"] for a in task["args"]], path)
            for a in args:
                if a["role"] == "scalar":
                    self.assertEqual(a["value"], sizes[a["name"]])
                    continue
                self.assertTrue(a["shape"] and all(isinstance(d, int) and d > 0 for d in a["shape"]), (path, a))
                if a["role"] == "input":
                    self.assertIn(a["init"][0], ("normal", "uniform", "randint"))

    def test_shape_init_overrides(self):
        task = peers.load_task(os.path.join(TASKS, "L2", "cross_entropy", "task.json"))
        args, _ = peers.bench_args(task)
        label = [a for a in args if a["name"] == "label"][0]
        self.assertEqual(label["init"], ("randint", 0, 128255))  # the bench shape's own, not the task's
        self.assertEqual(label["shape"], (4096,))

    def test_every_task_has_a_peer_that_fits(self):
        for path in peers.tasks_in(TASKS):
            self.assertEqual(peers.check_peer_layout(peers.load_task(path)), [], path)

    def test_layout_check_fails_on_a_change(self):
        task = peers.load_task(os.path.join(TASKS, "L1", "transpose", "task.json"))
        changed = copy.deepcopy(task)
        changed["args"][0]["shape"] = ["R", "C"]  # y no longer transposed
        self.assertEqual(len(peers.check_peer_layout(changed)), 1)
        changed = copy.deepcopy(task)
        changed["args"][1]["dtype"] = "bf16"
        self.assertEqual(len(peers.check_peer_layout(changed)), 1)
        changed["name"] = "no_such_task"
        self.assertEqual(len(peers.check_peer_layout(changed)), 1)

    def test_missing_scalar(self):
        task = peers.load_task(os.path.join(TASKS, "L1", "softmax", "task.json"))
        del task["shapes"]["bench"]["gpu"][0]["C"]
        with self.assertRaises(ValueError):
            peers.bench_args(task)


class CReference(unittest.TestCase):
    def test_reference_plumbing(self):
        """The harness the torch test uses: reference.c built and called with temper's layout."""
        import tempfile
        with tempfile.TemporaryDirectory() as work:
            add = c_reference(peers.load_task(os.path.join(TASKS, "L1", "vector_add", "task.json")), work)
            if add is None:
                self.skipTest("no C compiler")
            self.assertEqual(add([3], [[1.0, 2.0, 3.5], [10.0, 20.0, -3.5]], [3]), [[11.0, 22.0, 0.0]])
            tr = c_reference(peers.load_task(os.path.join(TASKS, "L1", "transpose", "task.json")), work)
            self.assertEqual(tr([6], [[1, 2, 3, 4, 5, 6]], [2, 3]), [[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]])


class Numbers(unittest.TestCase):
    def test_temper_numbers_and_table(self):
        suite = [{"task": "hgemm", "timings": [{"median_ms": 900.0, "expert_median_ms": 1.5, "expert": "cublas_hgemm_bf16"}]},
                 {"task": "softmax", "timings": [{"median_ms": 0.7}]}, {"task": "gelu", "timings": []},
                 {"task": "cumsum", "verdict": "incorrect", "candidate": "x/wrong.cu", "timings": [{"median_ms": 0.1}]},
                 {"task": "cumsum", "verdict": "correct", "candidate": "x/naive.cu", "timings": [{"median_ms": 0.3}]},
                 {"task": "cumsum", "verdict": "correct", "candidate": "x/fast.cu", "options": "-DVEC=4",
                  "timings": [{"median_ms": 0.2, "baseline_median_ms": 0.31}]}]
        best = {"hgemm": {"candidate": "tasks/L1/hgemm/wgmma.cu", "options": "-DBM=128",
                          "timings": [{"median_ms": 1.6, "expert_median_ms": 1.4, "expert": "cublas_hgemm_bf16"}]},
                "softmax": {"candidate": "tasks/L1/softmax/fast.cu", "options": "", "timings": [{"median_ms": 0.5}]}}
        nums = peers.temper_numbers(suite, best)
        self.assertEqual(nums["hgemm"]["tuned_ms"], 1.6)
        self.assertEqual(nums["hgemm"]["expert_ms"], 1.4)  # the one timed beside the best wins
        self.assertEqual(nums["softmax"]["baseline_ms"], 0.7)
        self.assertNotIn("gelu", nums)
        self.assertEqual(nums["softmax"]["tuned_ms"], 0.5)  # temper best wins over the suite's 0.7
        self.assertEqual(nums["cumsum"]["tuned_ms"], 0.2)  # the suite's fastest correct kernel, without a best
        self.assertEqual(nums["cumsum"]["tuned_by"], "fast.cu -DVEC=4 (in the suite)")
        self.assertEqual(nums["cumsum"]["baseline_ms"], 0.31)
        calib = {"copy_gbs": 4000.0, "fma_gflops": 60000.0, "tensor_bf16_gflops": 900000.0}
        tasks = {n: peers.load_task(os.path.join(TASKS, "L1", n, "task.json")) for n in ("softmax", "hgemm", "histogram")}
        rows = [{"task": "softmax", "tuned": 0.5, "eager": 0.8, "compile": 0.6, "triton": None},
                {"task": "hgemm", "tuned": 1.75, "expert": 1.4, "eager": 1.4, "compile": 1.45, "triton": 1.5},
                {"task": "histogram", "notes": "no peer"}]
        for r in rows:
            r.update(peers.outcome(tasks[r["task"]], r, calib))
        text = peers.table(rows).splitlines()
        self.assertEqual(len(text), 5)
        # softmax: 8*R*C bytes at 4000 GB/s; the faster peer (compile 0.6 ms) over temper's 0.5 ms
        copy_ms = peers.roofline(tasks["softmax"], calib)["copy_ms"]
        self.assertIn("| compile 0.6 | %.0f %% | %.0f %% | %.2fx | >= 1.05x peer | 1.200 | met |" % (
            100 * copy_ms / 0.5, 100 * copy_ms / 0.6, 0.6 / copy_ms), text[2])
        self.assertIn("| >= 1.0x torch.matmul | 0.800 | not met: 0.800x (goal 1x) |", text[3])  # 1.4 / 1.75
        self.assertTrue(text[4].startswith("| histogram | - |"))
        self.assertIn("| unknown: no peer time | no peer |", text[4])

    def test_jsonl(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "peers_test_%d.jsonl" % os.getpid())
        with open(path, "w") as f:
            f.write(json.dumps({"a": 1}) + "\nnot json\n" + json.dumps({"b": {"c": 2}}, indent=2) + "\n")
        try:
            self.assertEqual(peers.jsonl(path), [{"a": 1}, {"b": {"c": 2}}])
        finally:
            os.unlink(path)


class Report(unittest.TestCase):
    def test_report_joins_measured_rows_and_temper(self):
        import contextlib
        import io
        tmp = os.environ.get("TMPDIR", "/tmp")
        rows_path = os.path.join(tmp, "peers_test_rows_%d.json" % os.getpid())
        suite_path = os.path.join(tmp, "peers_test_suite_%d.jsonl" % os.getpid())
        with open(rows_path, "w") as f:
            json.dump({"rows": [{"task": "gemv", "eager": 0.04, "compile": 0.05, "notes": "1 s"}]}, f)
        with open(suite_path, "w") as f:
            f.write(json.dumps({"task": "gemv", "timings": [{"median_ms": 0.05, "expert_median_ms": 0.036,
                                                              "expert": "cublas_gemv_bf16"}]}) + "\n")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                rc = peers.main(["--report", "--json", rows_path, "--suite", suite_path, "--tasks", TASKS,
                                 "--only", "gemv"])
            with open(rows_path) as f:
                written = json.load(f)
        finally:
            os.unlink(rows_path)
            os.unlink(suite_path)
        self.assertEqual(rc, 0)
        line = [l for l in out.getvalue().splitlines() if l.startswith("| gemv |")]
        self.assertEqual(line, ["| gemv | 0.05 | 0.036 | 0.04 | 0.05 | - | eager 0.04 | - | - | - | >= 1.05x peer if"
                                " memory-bound | - | unknown: no calibration to tell memory-bound from compute-bound"
                                " | 1 s |"])
        self.assertEqual(written["rows"][0]["expert"], 0.036)

    def test_report_with_calibration_and_experts(self):
        """--calibrate's copy bandwidth turns into shares, at-most ratios and outcomes; --expert-run
        files into the experts' table (medians over rounds)."""
        import contextlib
        import io
        tmp = os.environ.get("TMPDIR", "/tmp")
        paths = {k: os.path.join(tmp, "peers_test_%s_%d.json" % (k, os.getpid()))
                 for k in ("rows", "suite", "calib", "cublas", "first1", "first2", "fastest")}
        with open(paths["rows"], "w") as f:
            json.dump({"rows": [{"task": "vector_add", "eager": 0.7424, "compile": 0.7418},
                                {"task": "hgemm", "eager": 1.587, "eager_lt": 1.45, "eager_idle": 1.43,
                                 "compile": 1.588, "triton": 1.719}]}, f)
        with open(paths["suite"], "w") as f:
            f.write(json.dumps({"task": "vector_add", "timings": [{"median_ms": 0.7341}]}) + "\n")
            f.write(json.dumps({"task": "hgemm", "timings": [{"median_ms": 1.533, "expert_median_ms": 1.376}]}) + "\n")
        with open(paths["calib"], "w") as f:
            json.dump({"copy_gbs": 4285.0, "fma_gflops": 62697.0, "tensor_bf16_gflops": 907451.0}, f)
        for k, ms in (("cublas", 1.44), ("first1", 1.42), ("first2", 1.46), ("fastest", 1.38)):
            with open(paths[k], "w") as f:
                f.write(json.dumps({"task": "hgemm", "timings": [{"median_ms": 1.5, "expert_median_ms": ms}]}) + "\n")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                rc = peers.main(["--report", "--json", paths["rows"], "--suite", paths["suite"], "--tasks", TASKS,
                                 "--only", "vector_add,hgemm", "--calibrate", paths["calib"],
                                 "--expert-run", "cublas=" + paths["cublas"], "--expert-run", "first=" + paths["first1"],
                                 "--expert-run", "first=" + paths["first2"], "--expert-run", "fastest=" + paths["fastest"]])
            with open(paths["rows"]) as f:
                written = json.load(f)
        finally:
            for p in paths.values():
                os.unlink(p)
        self.assertEqual(rc, 0)
        text = out.getvalue()
        # vector_add: 12 * 9786709 bytes at 4285 GB/s = 0.02741 ms... the task's own N: computed here
        task = peers.load_task(os.path.join(TASKS, "L1", "vector_add", "task.json"))
        copy_ms = peers.roofline(task, {"copy_gbs": 4285.0, "fma_gflops": 62697.0})["copy_ms"]
        row = [l for l in text.splitlines() if l.startswith("| vector_add |")][0]
        self.assertIn("cannot: the faster peer is at %.0f %% of copy, so at most %.2fx" % (
            100 * copy_ms / 0.7418, 0.7418 / copy_ms), row)
        hg = [l for l in text.splitlines() if l.startswith("| hgemm |")]
        self.assertEqual(len(hg), 2)  # the peers' table and the experts'
        self.assertIn("| eager_idle 1.43 |", hg[0])
        self.assertIn("| 0.933 | not met: 0.933x (goal 1x) |", hg[0])  # 1.43 / 1.533: the fastest torch.matmul
        self.assertEqual(hg[1], "| hgemm | 1.587 | 1.45 | 1.43 | 1.44 | 1.44 | 1.38 | 0.907 (outside 3 %) |"
                                " 0.993 (within 3 %) | 0.958 | 0.901 |")
        self.assertEqual(written["experts"]["hgemm"]["first"], [1.42, 1.46])
        self.assertEqual(written["rows"][1]["verdict"], "not met: 0.933x (goal 1x)")

    def test_gemm_goals_judged_interleaved(self):
        """--interleaved rounds (temper best against the cuBLAS call torch.matmul makes, in one
        worker) decide a GEMM goal over the times taken apart; a round that is not correct is left
        out, said so; the notes give every round and the ratio apart."""
        import contextlib
        import io
        tmp = os.environ.get("TMPDIR", "/tmp")
        paths = {k: os.path.join(tmp, "peers_test_il_%s_%d.json" % (k, os.getpid())) for k in ("rows", "suite", "il")}
        with open(paths["rows"], "w") as f:
            json.dump({"rows": [{"task": "hgemm", "eager": 1.363, "eager_lt": 1.363, "eager_idle": 1.523},
                                {"task": "sgemm", "eager": 2.684}]}, f)
        with open(paths["suite"], "w") as f:  # the tune's re-timing, taken in a slower clock state
            f.write(json.dumps({"task": "hgemm", "timings": [{"median_ms": 1.467, "expert_median_ms": 1.456}]}) + "\n")
            f.write(json.dumps({"task": "sgemm", "timings": [{"median_ms": 2.919, "expert_median_ms": 2.704}]}) + "\n")
        with open(paths["il"], "w") as f:
            for task, ms, ex in (("hgemm", 1.50, 1.53), ("hgemm", 1.40, 1.414), ("hgemm", 1.38, 1.38),
                                 ("sgemm", 2.90, 2.70)):
                f.write(json.dumps({"task": task, "verdict": "correct", "timings": [
                    {"median_ms": ms, "expert_median_ms": ex, "expert": "cublas_hgemm_bf16"}]}) + "\n")
            f.write(json.dumps({"task": "hgemm", "verdict": "incorrect", "timings": []}) + "\n")
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = peers.main(["--report", "--json", paths["rows"], "--suite", paths["suite"], "--tasks", TASKS,
                                 "--only", "hgemm,sgemm", "--interleaved", paths["il"]])
            with open(paths["rows"]) as f:
                written = json.load(f)
        finally:
            for p in paths.values():
                os.unlink(p)
        self.assertEqual(rc, 0)
        self.assertIn("a round of hgemm left out: incorrect", err.getvalue())
        hg = written["rows"][0]
        self.assertEqual(len(hg["il_ratios"]), 3)
        self.assertAlmostEqual(hg["il_ratio"], 1.01)  # the median of 1.02, 1.01, 1.00
        self.assertAlmostEqual(hg["goal_ratio"], 1.01)
        self.assertAlmostEqual(hg["apart_ratio"], 1.363 / 1.467)
        self.assertEqual(hg["verdict"], "met")
        line = [l for l in out.getvalue().splitlines() if l.startswith("| hgemm |")][0]
        self.assertIn("| 1.010 | met |", line)
        self.assertIn("3 rounds: 1.020, 1.010, 1.000; timed apart: 0.929", line)
        sg = written["rows"][1]  # one round, 2.70 / 2.90
        self.assertEqual(sg["verdict"], "not met: 0.931x (goal 0.95x)")
        self.assertAlmostEqual(sg["apart_ratio"], 2.704 / 2.919)

    def test_bad_expert_run(self):
        import contextlib
        import io
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "peers_test_rows_bad_%d.json" % os.getpid())
        with open(path, "w") as f:
            json.dump({"rows": []}, f)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                rc = peers.main(["--report", "--json", path, "--tasks", TASKS, "--only", "hgemm",
                                 "--expert-run", "top1=x.jsonl"])
        finally:
            os.unlink(path)
        self.assertEqual(rc, 2)
        self.assertIn("expected PICK=FILE with PICK one of cublas, first, fastest", err.getvalue())

    def test_report_without_rows(self):
        """A measure that wrote nothing leaves temper's numbers (one row a task, said so); a file
        that is not a measure's rows, or no --json, is refused."""
        import contextlib
        import io
        err, out = io.StringIO(), io.StringIO()
        missing = os.path.join(os.environ.get("TMPDIR", "/tmp"), "peers_test_missing_%d.json" % os.getpid())
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                rc = peers.main(["--report", "--json", missing, "--tasks", TASKS, "--only", "gelu,swiglu"])
            with open(missing) as f:
                self.assertEqual(len(json.load(f)["rows"]), 2)
        finally:
            if os.path.exists(missing):
                os.unlink(missing)
        self.assertEqual(rc, 0)
        self.assertIn("no measured peers", err.getvalue())
        self.assertEqual(len([l for l in out.getvalue().splitlines() if l.endswith("| peers not measured |")]), 2)
        bad = os.path.join(os.environ.get("TMPDIR", "/tmp"), "peers_test_bad_%d.json" % os.getpid())
        with open(bad, "w") as f:
            f.write("[1, 2]")
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                rc = peers.main(["--report", "--json", bad, "--tasks", TASKS])
        finally:
            os.unlink(bad)
        self.assertEqual(rc, 2)
        self.assertIn("holds no rows of a --measure run", err.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(peers.main(["--report", "--tasks", TASKS]), 2)
        self.assertIn("--report needs --json", err.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(peers.main(["--report", "--json", "/nonexistent/dir/peers.json", "--tasks", TASKS,
                                         "--only", "gelu"]), 1)
        self.assertIn("were not written to --json", err.getvalue())


class Goals(unittest.TestCase):
    """Issue 14's goals judged from known numbers (session 10's H200 table, copy times made up
    where it gave none)."""
    CALIB = {"copy_gbs": 4000.0, "fma_gflops": 60000.0, "tensor_bf16_gflops": 900000.0}

    def task(self, name):
        level = "L1" if os.path.isdir(os.path.join(TASKS, "L1", name)) else "L2"
        return peers.load_task(os.path.join(TASKS, level, name, "task.json"))

    def goal(self, name):
        task = self.task(name)
        return peers.goal_of(task, peers.roofline(task, self.CALIB)["bound"])

    def test_roofline(self):
        va = peers.roofline(self.task("vector_add"), self.CALIB)
        n = self.task("vector_add")["shapes"]["bench"]["gpu"][0]["N"]
        self.assertEqual(va["bytes"], 12 * n)
        self.assertAlmostEqual(va["copy_ms"], 12 * n / 4e12 * 1e3)
        self.assertEqual(va["bound"], "memory")
        self.assertEqual(peers.roofline(self.task("hgemm"), self.CALIB)["bound"], "compute")  # on the bf16 ceiling
        self.assertEqual(peers.roofline(self.task("sgemm"), self.CALIB)["bound"], "compute")
        self.assertEqual(peers.roofline(self.task("conv2d"), self.CALIB)["bound"], "compute")
        none = peers.roofline(self.task("softmax"), None)
        self.assertIsNone(none["copy_ms"])
        self.assertIsNone(none["bound"])

    def test_goal_of(self):
        self.assertEqual(self.goal("softmax")["ratio"], 1.05)
        self.assertEqual(self.goal("transpose")["ref"], "peer")
        self.assertEqual(self.goal("sgemm")["ref"], "expert")
        self.assertEqual(self.goal("sgemm")["ratio"], 0.95)
        self.assertEqual(self.goal("hgemm")["ref"], "matmul")
        for name in peers.FUSED_L2:
            self.assertEqual((self.goal(name)["ratio"], self.goal(name)["copy"]), (1.2, 0.90), name)
        self.assertIsNone(self.goal("conv2d"))  # compute-bound L1: no goal in issue 14
        self.assertIsNone(self.goal("softmax_backward"))  # an L2 task the issue names no goal for
        self.assertIsNone(self.goal("int8_gemm"))

    def test_judge(self):
        g = {n: self.goal(n) for n in ("vector_add", "add_layernorm", "sgemm", "hgemm")}
        self.assertEqual(peers.judge(g["vector_add"], 0.1333, 0.1727, 0.1727, 0.12), "met")  # cumsum-like: 1.30x
        self.assertEqual(peers.judge(g["vector_add"], 0.5061, 0.5217, 0.5217, 0.4),
                         "not met: 1.031x (goal 1.05x)")  # a kernel at copy bandwidth would be 1.30x
        self.assertEqual(peers.judge(g["vector_add"], 0.7341, 0.7418, 0.7418, 0.7329),
                         "cannot: the faster peer is at 99 % of copy, so at most 1.01x")
        # two decimals would round up to the goal: three are printed
        self.assertEqual(peers.judge(g["vector_add"], 1.0, 1.0, 1.0, 1.0 / 1.048),
                         "cannot: the faster peer is at 95 % of copy, so at most 1.048x")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.2579, 0.2774, 0.2774, 0.2503),
                         "cannot: the faster peer is at 90 % of copy, so at most 1.11x")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.1488, 0.1387, 0.1387, 0.1253),  # attention_decode
                         "cannot: the faster peer is at 90 % of copy, so at most 1.11x; and 84 % of copy (goal 90 %)")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.1045, 0.2078, 0.2078, 0.0626),  # rmsnorm_rope
                         "not met: 60 % of copy (goal 90 %)")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.3, 0.37, 0.37, 0.2), "not met: 67 % of copy (goal 90 %)")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.25, 0.31, 0.31, 0.24), "met")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.3, 0.33, 0.33, 0.2),
                         "not met: 1.100x (goal 1.2x), 67 % of copy (goal 90 %)")  # at most 1.65x: possible
        self.assertEqual(peers.judge(g["sgemm"], 2.932, 2.686, 2.68, 0.05), "not met: 0.916x (goal 0.95x)")
        self.assertEqual(peers.judge(g["sgemm"], 2.8, 2.686, 2.68, 0.05), "met")
        self.assertEqual(peers.judge(g["hgemm"], 1.533, 1.587, 1.587, 0.1), "met")
        self.assertEqual(peers.judge(None, 1.0, 1.0, 1.0, 1.0), "no goal")
        self.assertEqual(peers.judge(g["sgemm"], 2.9, None, 2.68, 0.05), "unknown: no expert time")
        self.assertEqual(peers.judge(g["vector_add"], None, 0.7, 0.7, 0.6), "unknown: no temper best")
        self.assertEqual(peers.judge(g["add_layernorm"], 0.2, 0.3, 0.3, None), "unknown: no copy bandwidth measured")

    def test_outcome_columns(self):
        task = self.task("swiglu")
        copy_ms = peers.roofline(task, self.CALIB)["copy_ms"]
        row = {"task": "swiglu", "tuned": copy_ms / 1.03, "eager": copy_ms / 0.55, "compile": copy_ms / 0.98}
        o = peers.outcome(task, row, self.CALIB)
        self.assertEqual((o["peer"], o["peer_ms"]), ("compile", row["compile"]))
        self.assertAlmostEqual(o["tuned_copy"], 1.03)
        self.assertAlmostEqual(o["peer_copy"], 0.98)
        self.assertAlmostEqual(o["at_most"], 1 / 0.98)
        self.assertAlmostEqual(o["goal_ratio"], 1.03 / 0.98)
        self.assertEqual(o["verdict"], "cannot: the faster peer is at 98 % of copy, so at most 1.02x")

    def test_matmul_reference_is_the_fastest_torch_matmul(self):
        row = {"task": "hgemm", "tuned": 1.5, "eager": 1.6, "eager_lt": 1.55, "eager_idle": 1.45, "triton": 1.4}
        o = peers.outcome(self.task("hgemm"), row, self.CALIB)
        self.assertEqual(o["peer"], "triton")  # the faster peer overall
        self.assertAlmostEqual(o["goal_ratio"], 1.45 / 1.5)  # but the goal is torch.matmul's
        self.assertEqual(o["verdict"], "not met: 0.967x (goal 1x)")


class TuneOrder(unittest.TestCase):
    def test_order(self):
        files = ["tasks/L1/vector_add/fast.cu", "tasks/L1/sgemm/tiled.cu", "tasks/L1/hgemm/mma.cu",
                 "tasks/L1/hgemm/wgmma.cu", "tasks/L1/sgemm/warptile.cu", "tasks/L2/zz_new/fast.cu",
                 "tasks/L1/aa_new/fast.cu", "tasks/L2/rmsnorm_rope/fast.cu"]
        suite = [{"candidate": "tasks/L1/hgemm/wgmma.cu", "verdict": "correct", "timings": [{"median_ms": 1.6}]},
                 {"candidate": "tasks/L1/hgemm/mma.cu", "verdict": "correct", "timings": [{"median_ms": 2.9}]},
                 {"candidate": "tasks/L1/sgemm/tiled.cu", "verdict": "correct", "timings": [{"median_ms": 2.9}]},
                 {"candidate": "tasks/L1/sgemm/warptile.cu", "verdict": "correct", "timings": [{"median_ms": 2.7}]},
                 {"candidate": "tasks/L1/sgemm/tiled.cu", "verdict": "incorrect", "timings": [{"median_ms": 0.1}]}]
        self.assertEqual(peers.tune_order(files, suite), [
            "tasks/L1/sgemm/warptile.cu",  # sgemm first, its fastest kernel at default knobs first
            "tasks/L2/rmsnorm_rope/fast.cu", "tasks/L1/hgemm/wgmma.cu", "tasks/L1/vector_add/fast.cu",
            "tasks/L1/aa_new/fast.cu", "tasks/L2/zz_new/fast.cu",  # tasks not in the priority list: level, name
            "tasks/L1/sgemm/tiled.cu", "tasks/L1/hgemm/mma.cu"])  # the second pass
        # without suite results: by name within a task
        self.assertEqual(peers.tune_order(["tasks/L1/sgemm/b.cu", "tasks/L1/sgemm/a.cu"], []),
                         ["tasks/L1/sgemm/a.cu", "tasks/L1/sgemm/b.cu"])

    def test_cli(self):
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = peers.main(["--tune-order", "tasks/L1/gelu/fast.cu", "tasks/L1/transpose/fast.cu"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().split(), ["tasks/L1/transpose/fast.cu", "tasks/L1/gelu/fast.cu"])


def c_reference(task, workdir):
    """The task's reference.c built into a shared library, as a callable (outs, ins, scalars) over
    lists of Python floats; None without a C compiler."""
    import ctypes
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None
    lib = os.path.join(workdir, task["name"] + ".so")
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", lib, os.path.join(task["dir"], task.get("reference", "reference.c")),
                    "-lm"], check=True)
    fn = ctypes.CDLL(lib).reference
    dp = ctypes.POINTER(ctypes.c_double)

    def call(out_sizes, ins, scalars):
        outs = [(ctypes.c_double * max(n, 1))() for n in out_sizes]
        ins_c = [(ctypes.c_double * max(len(v), 1))(*v) for v in ins]
        fn((dp * len(outs))(*[ctypes.cast(o, dp) for o in outs]), (dp * max(len(ins_c), 1))(*[ctypes.cast(i, dp) for i in ins_c]),
           (ctypes.c_longlong * max(len(scalars), 1))(*scalars))
        return [list(o)[:n] for o, n in zip(outs, out_sizes)]
    return call


class Torch(unittest.TestCase):
    """Each PyTorch peer against the task's own C reference (reference.c, compiled here) on a
    check shape, on the CPU: the peers compute what temper's tasks define. Skipped without torch
    (CI); run where torch is installed (any CPU)."""

    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed here (the GPU machine has it)")

    def test_every_peer_matches_its_c_reference(self):
        import tempfile
        import torch
        gen = torch.Generator()
        gen.manual_seed(3)
        with tempfile.TemporaryDirectory() as work:
            for path in peers.tasks_in(TASKS):
                task = peers.load_task(path)
                with self.subTest(task=task["name"]):
                    self.check_task(torch, gen, task, work)

    def check_task(self, torch, gen, task, work):
        """One task's eager peer on the check shape (under 300k elements an argument) whose smallest
        size parameter is largest: the least degenerate one."""
        best = None
        for shape in task["shapes"]["check"]:
            sizes = {k: v for k, v in shape.items() if k != "init"}
            biggest = max(math_prod(peers.eval_expr(d, sizes) for d in a["shape"]) for a in task["args"]
                          if a["role"] != "scalar")
            key = (min(sizes.values()), biggest)
            if task["name"] == "int8_gemm" and not (sizes["M"] > 16 and sizes["K"] % 8 == 0 and sizes["N"] % 8 == 0):
                continue  # torch._int_mm's own limits (M > 16, K and N multiples of 8)
            if biggest <= 300000 and (best is None or key > best[0]):
                best = (key, shape)
        if best is None:
            self.skipTest("no check shape within the peer's limits")
        task["shapes"]["bench"]["gpu"] = [best[1]]
        args, sizes = peers.bench_args(task)
        t = peers.make_inputs(torch, args, gen, device="cpu")
        got = peers.peers_for(torch, task["name"], t)["eager"]()
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        outs = [a for a in args if a["role"] == "output"]
        ins = [a for a in args if a["role"] == "input"]
        ref = c_reference(task, work)
        if ref is None:
            self.skipTest("no C compiler")
        want = ref([math_prod(a["shape"]) for a in outs], [t[a["name"]].double().reshape(-1).tolist() for a in ins],
                   [a["value"] for a in args if a["role"] == "scalar"])
        for a, g, w in zip(outs, got, want):
            g = g.double().reshape(-1)
            w = torch.tensor(w, dtype=torch.float64)
            self.assertEqual(g.numel(), w.numel(), (task["name"], a["name"]))
            scale = max(float(w.abs().max()), 1e-30)
            err = float((g - w).abs().max()) / scale
            bound = 2e-2 if a["dtype"] == "bf16" else 1e-4
            self.assertLess(err, bound, "%s: output %s at %s differs from reference.c by %.3g of its largest"
                            " value" % (task["name"], a["name"], sizes, err))


def math_prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


if __name__ == "__main__":
    unittest.main(verbosity=1)
