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
                 {"task": "softmax", "timings": [{"median_ms": 0.7}]}, {"task": "gelu", "timings": []}]
        best = {"hgemm": {"candidate": "tasks/L1/hgemm/wgmma.cu", "options": "-DBM=128",
                          "timings": [{"median_ms": 1.6, "expert_median_ms": 1.4, "expert": "cublas_hgemm_bf16"}]},
                "softmax": {"candidate": "tasks/L1/softmax/fast.cu", "options": "", "timings": [{"median_ms": 0.5}]}}
        nums = peers.temper_numbers(suite, best)
        self.assertEqual(nums["hgemm"]["tuned_ms"], 1.6)
        self.assertEqual(nums["hgemm"]["expert_ms"], 1.4)  # the one timed beside the best wins
        self.assertEqual(nums["softmax"]["baseline_ms"], 0.7)
        self.assertNotIn("gelu", nums)
        rows = [{"task": "softmax", "tuned": 0.5, "eager": 0.8, "compile": 0.6, "triton": None},
                {"task": "hgemm", "tuned": 1.75, "expert": 1.4, "eager": 1.4, "compile": 1.45, "triton": 1.5},
                {"task": "histogram", "notes": "no peer"}]
        text = peers.table(rows).splitlines()
        self.assertEqual(len(text), 5)
        self.assertIn("| 1.20 |", text[2])  # 0.6 / 0.5: the faster peer over temper's tuned best
        self.assertIn("| 0.80 | 1.000 |", text[3])  # 1.4 / 1.75; expert / eager
        self.assertTrue(text[4].startswith("| histogram | - |"))

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
            written = json.load(open(rows_path))
        finally:
            os.unlink(rows_path)
            os.unlink(suite_path)
        self.assertEqual(rc, 0)
        line = [l for l in out.getvalue().splitlines() if l.startswith("| gemv |")]
        self.assertEqual(line, ["| gemv | - | 0.036 | 0.04 | 0.05 | - | - | 0.900 | 1 s |"])
        self.assertEqual(written["rows"][0]["expert"], 0.036)

    def test_report_without_rows(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = peers.main(["--report", "--json", "/nonexistent/peers.json", "--tasks", TASKS])
        self.assertEqual(rc, 2)
        self.assertIn("--report needs", err.getvalue())


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
