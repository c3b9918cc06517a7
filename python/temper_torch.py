"""temper_torch.py: temper's side of a task whose reference is a PyTorch program (KernelBench's
format: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`, sizes as module constants).

temper starts it through `temper-worker python`, which confines the process (namespaces, seccomp,
Landlock: it reads the system, the Python environment and the task; it writes only its scratch
folder; it has no network) before the interpreter starts. Two modes:

  serve   reads requests from standard input (one JSON line, then the inputs as raw float64 in
          the order the line lists them) and computes each one's outputs in float64 on the CPU,
          writing one JSON line and then the outputs as raw float64 to standard output.
  import  kernelbench FILE [LEVEL]: reads a KernelBench problem and writes one JSON line to
          standard output: {"task": task.json's content} or {"refused": why}.
          flashinfer FILE [LEVEL]: the same for a FlashInfer-Bench definition (JSON), with
          "reference_text", the KernelBench-format program made around its reference.

A fault in the program is answered {"error": "FILE:LINE: Type: message"}, so that temper makes it
the task's error with the line that raised it.
"""
import array
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback

DTYPES = {}  # torch dtype -> temper dtype, filled once torch is imported
CHECK_ELEMS_MAX = 4 << 20  # elements one check shape may hold in all its tensors
CPU_BENCH_ELEMS = 1 << 21  # elements the CPU bench shape holds at most


def where_raised(exc, path):
    """FILE:LINE: Type: message, naming the deepest frame in the task's own file (else the last)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    f = mine[-1] if mine else (frames[-1] if frames else None)
    loc = "%s:%d" % (f.filename, f.lineno) if f else path
    return "%s: %s: %s" % (loc, type(exc).__name__, exc)


def load_module(path, constants=None):
    spec = importlib.util.spec_from_file_location("temper_task_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for k, v in (constants or {}).items():
        setattr(mod, k, v)
    return mod


def as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def build(mod, torch):
    """The module at the constants set, in float64, with the same initial parameters every time."""
    torch.manual_seed(0)
    model = mod.Model(*as_list(mod.get_init_inputs()))
    return model.double()  # in training mode, as KernelBench runs it


# ---- serve ----

class Fail(Exception):
    """The reference's fault: the task's error, with this message."""


def compute(req, raw, torch):
    """The outputs' float64 bytes for one request (its inputs in raw)."""
    path = req["reference"]
    with open(os.path.join(req["task_dir"], "task.json")) as f:
        spec = json.load(f).get("torch")
    if not isinstance(spec, dict):
        raise Fail("%s/task.json: no \"torch\" object: a Python reference needs one (docs/task.md)" % req["task_dir"])
    tensors, at = {}, 0
    for a in req["inputs"]:
        n = a["elements"]
        t = torch.frombuffer(bytearray(raw[at:at + 8 * n]), dtype=torch.float64) if n else \
            torch.zeros(0, dtype=torch.float64)
        at += 8 * n
        t = t.reshape(a["shape"])
        if a["dtype"] in ("i8", "u8", "i32", "i64"):
            t = t.to(torch.int64)
        tensors[a["name"]] = t
    names = spec.get("sizes", {})
    constants = {names.get(k, k): int(v) for k, v in req["scalars"].items()}
    try:
        mod = load_module(path, constants)
        model = build(mod, torch)
        params = dict(model.named_parameters())
        with torch.no_grad():
            for arg, key in spec.get("params", {}).items():
                if key not in params:
                    raise Fail("%s: the model has no parameter %r (task.json's torch.params names it for %s)" %
                               (path, key, arg))
                if tuple(params[key].shape) != tuple(tensors[arg].shape):
                    raise Fail("%s: parameter %s has shape %s, the task's %s %s" %
                               (path, key, tuple(params[key].shape), arg, tuple(tensors[arg].shape)))
                params[key].copy_(tensors[arg])
            args = [tensors[x] if isinstance(x, str) else x["value"] for x in spec["forward"]]
            out = as_list(model(*args))
    except Fail:
        raise
    except Exception as e:  # the program's fault: the task's error, with its line
        raise Fail(where_raised(e, path))
    want = req["outputs"]
    if len(out) != len(want):
        raise Fail("%s: forward returned %d outputs, the task has %d" % (path, len(out), len(want)))
    blobs = []
    for o, w in zip(out, want):
        if not torch.is_tensor(o):
            o = torch.tensor(o)
        o = o.detach().to(torch.float64).contiguous()
        if o.numel() != w["elements"]:
            raise Fail("%s: output %s has %d elements (shape %s), the task's shape gives %d" %
                       (path, w["name"], o.numel(), tuple(o.shape), w["elements"]))
        blobs.append(array.array("d", o.flatten().tolist()).tobytes())
    return b"".join(blobs)


def serve():
    """Requests until standard input closes: a JSON line ({..., "bytes": N}) and N bytes of inputs;
    each answered with a JSON line ({"bytes": M} or {"error": why}) and M bytes of outputs. One
    interpreter serves a task's every shape, so torch is imported once."""
    import torch
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    for line in iter(inp.readline, b""):
        req = json.loads(line)
        raw = inp.read(req["bytes"])
        try:
            data = compute(req, raw, torch)
            head = {"bytes": len(data)}
        except Fail as e:
            data, head = b"", {"error": str(e)}
        out.write((json.dumps(head) + "\n").encode())
        out.write(data)
        out.flush()


# ---- import ----

TEMPER_DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                "int8": "i8", "uint8": "u8"}
# Tolerances by output dtype (atol, rtol): fp32 sums of a few thousand terms stay well inside 1e-4,
# and the shapes past 65,536 draw small integers (below), whose sums are exact.
TOLERANCE = {"f32": (1e-4, 1e-4), "f16": (2e-3, 1e-2), "bf16": (1e-2, 2e-2)}
INPUT_INIT = "normal(0.5,1)"   # an offset: an output of zeros, or of the mean, fails
PARAM_INIT = "uniform(-1,1)"
LARGE_INIT = "randint(-2,2)"   # at a size past 65,536: exact sums, so the shape checks indexing


class Refused(Exception):
    pass


def ident(name):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "v_" + out


def probe(path, sizes, torch, forward=True):
    """The module's tensors at these sizes: (inputs, params, outputs, forward's argument names), computed
    on the CPU in the module's own dtypes (outputs only when forward is set)."""
    mod = load_module(path, sizes)
    torch.manual_seed(0)
    model = mod.Model(*as_list(mod.get_init_inputs()))
    inputs = as_list(mod.get_inputs())
    out = None
    if forward:
        with torch.no_grad():
            out = [o for o in as_list(model(*inputs))]
    return inputs, list(model.named_parameters()), out, model


def shapes_of(inputs, params, outputs, torch):
    t = [tuple(x.shape) if torch.is_tensor(x) else None for x in inputs]
    t += [tuple(p.shape) for _, p in params]
    t += [tuple(o.shape) for o in (outputs or [])]
    return t


def fit_dim(values, base, sizes):
    """An expression for one dimension from its value at the base (values[None]) and at each size
    doubled and tripled (values[(k, 2)], values[(k, 3)]): affine in the sizes, or a multiple of a
    product of them. None when neither fits."""
    d0 = values[None]
    deps = [k for k in sizes if values[(k, 2)] != d0 or values[(k, 3)] != d0]
    if not deps:
        return str(d0)
    prod = 1
    for k in deps:
        prod *= base[k]
    if d0 % prod == 0 and all(values[(k, m)] == d0 * m for k in deps for m in (2, 3)):
        c = d0 // prod
        return "*".join(([str(c)] if c != 1 else []) + deps)
    coef = {}
    for k in deps:
        a = (values[(k, 2)] - d0) // base[k]
        if a * base[k] != values[(k, 2)] - d0 or values[(k, 3)] - d0 != 2 * a * base[k]:
            return None
        coef[k] = a
    c0 = d0 - sum(coef[k] * base[k] for k in deps)
    terms = sorted(((coef[k], k) for k in deps if coef[k]), key=lambda t: t[0] < 0)
    expr = ""
    for a, k in terms + ([(c0, None)] if c0 else []):
        mag = str(abs(a)) if k is None else k if abs(a) == 1 else "%d*%s" % (abs(a), k)
        expr += ("-" if a < 0 else "") + mag if not expr else (" - " if a < 0 else " + ") + mag
    return expr or "0"


def base_candidates(consts):
    """Small stand-ins for the constants: distinct odd sizes, else the constants halved down (which
    keeps divisibility between them)."""
    big = [k for k, v in consts.items() if v > 16]
    # Past three times the small constants kept (a kernel size), so that each stays valid when a
    # size is doubled or tripled to fit the shapes.
    floor = max(3 * max([v for v in consts.values() if v <= 16] or [1]) + 1, 17)
    first, primes = dict(consts), [p for p in range(floor, floor + 400) if all(p % d for d in range(2, p))]
    for i, k in enumerate(big):
        first[k] = primes[i % len(primes)] if consts[k] > primes[i % len(primes)] else consts[k]
    yield first
    for cap in (64, 16):
        halved = {}
        for k, v in consts.items():
            while v > cap and v % 2 == 0:
                v //= 2
            halved[k] = v if v <= cap else cap
        yield halved


def run_probe(path, sizes, torch, forward=True):
    try:
        return probe(path, sizes, torch, forward)
    except Exception as e:
        raise Refused(where_raised(e, path))


def settle_base(path, consts, torch):
    """Base values of the constants at which the module runs, the sizes among them (the constants
    that change a tensor's shape), and the perturbed shapes the expressions are fitted to."""
    base, why = None, None
    for cand in base_candidates(consts):
        try:
            probe(path, cand, torch)
            base = cand
            break
        except Exception as e:
            why = why or where_raised(e, path)
    if base is None:
        raise Refused("it does not run at small sizes: %s" % why)
    inputs, params, _, _ = run_probe(path, base, torch, forward=False)
    plain = shapes_of(inputs, params, None, torch)
    sizes = []
    for k in consts:
        i2, p2, _, _ = run_probe(path, dict(base, **{k: base[k] * 2}), torch, forward=False)
        if shapes_of(i2, p2, None, torch) != plain:
            sizes.append(k)
    for k in consts:  # constants that are not sizes keep the file's value
        if k not in sizes:
            base[k] = consts[k]
    inputs, params, outs, model = run_probe(path, base, torch)
    values = {None: shapes_of(inputs, params, outs, torch)}
    for k in sizes:
        for m in (2, 3):
            i2, p2, o2, _ = run_probe(path, dict(base, **{k: base[k] * m}), torch)
            values[(k, m)] = shapes_of(i2, p2, o2, torch)
            if [len(s or ()) for s in values[(k, m)]] != [len(s or ()) for s in values[None]]:
                raise Refused("a tensor's rank changes with %s" % k)
    return base, sizes, values, (inputs, params, outs, model)


def tensor_args(path, probed, torch, notes):
    """The task's arguments but the scalars, each (name, role, dtype, index into the probed shapes),
    and the reference's mapping (forward's arguments, parameters)."""
    inputs, params, outs, model = probed
    sig = [p.name for p in inspect.signature(model.forward).parameters.values()
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    outputs, ins, forward, pmap = [], [], [], {}
    for j, o in enumerate(outs):
        if not torch.is_tensor(o):
            raise Refused("forward's output %d is not a tensor" % j)
        outputs.append(("out" if len(outs) == 1 else "out%d" % j, "output", o.dtype, len(inputs) + len(params) + j))
    for i, x in enumerate(inputs):
        if torch.is_tensor(x):
            name = ident(sig[i]) if i < len(sig) else "x%d" % i
            ins.append((name, "input", x.dtype, i))
            forward.append(name)
        elif isinstance(x, (bool, int, float)):
            forward.append({"value": x})
            notes.append("forward's argument %d is the constant %r, passed as it is" % (i, x))
        else:
            raise Refused("get_inputs() gives a %s (argument %d): only tensors and numbers are imported" %
                          (type(x).__name__, i))
    for j, (pname, p) in enumerate(params):
        name = ident(pname.replace(".", "_"))
        ins.append((name, "input", p.dtype, len(inputs) + j))
        pmap[name] = pname
        notes.append("parameter %s is the task's input %s, drawn from %s" % (pname, name, PARAM_INIT))
    if list(model.named_buffers()):
        notes.append("buffers (%s) keep the values the module gives them" %
                     ", ".join(n for n, _ in model.named_buffers()))
    for name, role, dt, _ in outputs + ins:
        t = TEMPER_DTYPE.get(str(dt).replace("torch.", ""))
        if t is None:
            raise Refused("%s has dtype %s, which temper has no element type for" % (name, dt))
        if role == "input" and t[0] in "iu":
            raise Refused("%s is an integer tensor: integer inputs (indices) are not imported yet, since their "
                          "valid range depends on the problem" % name)
    return outputs, ins, forward, pmap


def evaluate(expr, sizes):
    return eval(expr, {"__builtins__": {}}, dict(sizes))


def check_shapes(path, base, sizes, consts, shape_of, torch, floats, notes):
    """Scaled-down, edge and past-65,536 check shapes that the module runs at, at most 16."""
    fixed = {k: v for k, v in base.items() if k not in sizes}
    small = {k: base[k] for k in sizes}
    cands = [small, {k: 1 for k in sizes}]
    for k in sizes:
        cands.append(dict({j: 1 for j in sizes}, **{k: 65537}))
    for k in sizes:
        cands.append(dict(small, **{k: 1}))
    out, seen = [], []
    for c in cands:
        if c in seen or len(out) == 16:
            continue
        seen.append(c)
        dims = [evaluate(e, c) for shape in shape_of for e in shape]
        elems = sum(math.prod(evaluate(e, c) for e in shape) for shape in shape_of)
        if min(dims or [1]) < 0 or elems > CHECK_ELEMS_MAX:
            continue
        try:
            probe(path, dict(fixed, **c), torch)
        except Exception as e:
            notes.append("no check shape %s: %s" % (json.dumps(c), where_raised(e, path)))
            continue
        shape = dict(c)
        if any(v > 65536 for v in c.values()) and floats:
            shape["init"] = {n: LARGE_INIT for n in floats[:4]}
        out.append(shape)
    missing = [k for k in sizes if not any(s[k] > 65536 for s in out)]
    if missing:
        notes.append("no check shape takes %s past 65,536 (the module does not run there, or its tensors would hold "
                     "more than %d elements)" % (", ".join(missing), CHECK_ELEMS_MAX))
    return out


def cpu_bench(consts, sizes, shape_of):
    """The bench shape scaled down for OpenCL on a CPU: the largest size halved until the tensors
    hold at most CPU_BENCH_ELEMS elements."""
    s = {k: consts[k] for k in sizes}
    while sizes and sum(math.prod(evaluate(e, s) for e in sh) for sh in shape_of) > CPU_BENCH_ELEMS:
        k = max(sizes, key=lambda j: s[j])
        if s[k] <= 16:
            break
        s[k] //= 2
    return s


def make_task(path, name, level, summary, entries, pmap, forward, sizes, consts, base, torch, notes, flops=None):
    """task.json's content from the arguments (entries: name, role, temper dtype, shape), the sizes
    (scalars; consts their bench values, base the values the module runs at when fitted) and the
    reference's mapping; check shapes are only those the module at path runs at."""
    names = [e[0] for e in entries] + [ident(k) for k in sizes]
    if len(set(names)) != len(names):
        raise Refused("two arguments would share a name: %s" % ", ".join(names))
    args, shape_of, bytes_terms, out_terms, floats = [], [], [], [], []
    for aname, role, t, shape in entries:
        arg = {"name": aname, "role": role, "dtype": t, "shape": shape}
        if role == "input":
            arg["init"] = PARAM_INIT if aname in pmap else INPUT_INIT
            floats.append(aname)
        args.append(arg)
        count = "*".join("(%s)" % x for x in shape)
        shape_of.append([str(x) for x in shape])
        bytes_terms.append("%d*%s" % ({"f32": 4, "f16": 2, "bf16": 2}.get(t, 8 if t == "i64" else 4), count))
        if role == "output":
            out_terms.append(count)
    for k in sizes:
        args.append({"name": ident(k), "role": "scalar", "dtype": "i32" if consts[k] < 2 ** 31 else "i64"})
    otype = args[0]["dtype"]
    atol, rtol = TOLERANCE.get(otype, (0, 0))
    task = {
        "name": name[:63], "level": level, "summary": summary[:500],
        "args": args, "flops": flops or " + ".join(out_terms), "bytes": " + ".join(bytes_terms),
        "tolerance": {"atol": atol, "rtol": rtol},
        "tolerance_note": "temper tasks import: by the output's dtype (%s); past 65,536 inputs are %s, whose sums are "
                          "exact" % (otype, LARGE_INIT),
        "shapes": {"check": check_shapes(path, base, sizes, consts, shape_of, torch, floats, notes),
                   "bench": {"gpu": [{k: consts[k] for k in sizes}], "cpu": [cpu_bench(consts, sizes, shape_of)]}},
        "reference": "reference.py",
        "torch": {"forward": forward, "params": pmap, "sizes": {ident(k): k for k in sizes}},
    }
    if not flops:
        notes.append("flops counts one operation per output element (a lower bound, for the roofline)")
    task["import_notes"] = notes
    return task


def import_problem(path, level, torch):
    notes = []
    try:
        mod = load_module(path)
    except Exception as e:
        raise Refused(where_raised(e, path))
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, need):
            raise Refused("it has no %s (KernelBench's format: class Model, get_inputs, get_init_inputs)" % need)
    consts = {k: v for k, v in vars(mod).items() if type(v) is int and not k.startswith("_") and k.isidentifier()}
    base, sizes, values, probed = settle_base(path, consts, torch)
    outputs, ins, forward, pmap = tensor_args(path, probed, torch, notes)
    entries = []
    for aname, role, dt, idx in outputs + ins:
        shape = []
        for d in range(len(values[None][idx])):
            e = fit_dim({key: v[idx][d] for key, v in values.items()}, base, sizes)
            if e is None:
                raise Refused("dimension %d of %s is neither affine in the sizes nor a product of them" % (d, aname))
            shape.append(e if not e.lstrip("-").isdigit() else int(e))
        if not shape:
            shape = [1]
            notes.append("%s is a 0-dimensional tensor: the task gives it one element" % aname)
        entries.append((aname, role, TEMPER_DTYPE[str(dt).replace("torch.", "")], shape))
    notes.append("sizes (scalars): %s; constants kept as the file gives them: %s" %
                 (", ".join(sizes) or "none", ", ".join(k for k in consts if k not in sizes) or "none"))
    name = ident(os.path.splitext(os.path.basename(path))[0].lower())
    doc = (inspect.getdoc(mod) or inspect.getdoc(mod.Model) or "").strip().splitlines()
    summary = doc[0] if doc else "KernelBench-format problem %s" % os.path.basename(path)
    flops = fit_flops(path, base, sizes, torch, notes)
    return make_task(path, name, level, summary, entries, pmap, forward, sizes, consts, base, torch, notes, flops)


def fit_flops(path, base, sizes, torch, notes):
    """PyTorch's count of the module's matrix products and convolutions (torch.utils.flop_counter),
    as an expression over the sizes, where one fits; None otherwise (elementwise work counts 0)."""
    from torch.utils.flop_counter import FlopCounterMode

    def count(at):
        with FlopCounterMode(display=False) as fc:
            probe(path, at, torch)
        return fc.get_total_flops()
    try:
        values = {None: count(base)}
        for k in sizes:
            for m in (2, 3):
                values[(k, m)] = count(dict(base, **{k: base[k] * m}))
    except Exception:
        return None
    expr = fit_dim(values, base, sizes) if values[None] > 0 else None
    if expr:
        notes.append("flops: PyTorch's count of its matrix products and convolutions, %s" % expr)
    return expr


FLASHINFER_DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                    "int8": "i8", "uint8": "u8"}
VAR_AXIS_BENCH = 1024  # a var axis's value at the bench shape (a definition gives none: workloads do)


def flashinfer_module(d, var, const):
    """A KernelBench-format program around a definition's reference: Model.forward calls run(); the
    axes are module constants, so the reference runs exactly as for an imported KernelBench file."""
    def shape(spec):
        return "(%s)" % "".join("%s, " % x for x in spec["shape"])
    doc = (d.get("description") or d["name"]).replace('"', "'").splitlines()[0]
    lines = ['"%s (FlashInfer-Bench definition %s, imported by temper)."' % (doc, d["name"]),
             "import torch", "import torch.nn as nn", "", d["reference"], "", "",
             "class Model(nn.Module):", "    def forward(self, *args):", "        return run(*args)", "", ""]
    lines += ["%s = %d" % (k, VAR_AXIS_BENCH) for k in var] + ["%s = %d" % (k, v) for k, v in const.items()]
    lines += ["", "", "def get_inputs():", "    return ["]
    for spec in d["inputs"].values():
        lines.append("        torch.randn(%s, dtype=torch.%s)," % (shape(spec), spec["dtype"]))
    lines += ["    ]", "", "", "def get_init_inputs():", "    return []", ""]
    return "\n".join(lines)


def import_flashinfer(path, level, torch):
    """task.json and reference.py's text for a FlashInfer-Bench definition (a JSON file)."""
    notes = []
    try:
        with open(path) as f:
            d = json.load(f)
        axes, ins, outs = d["axes"], d["inputs"], d["outputs"]
        if not isinstance(d["reference"], str) or not isinstance(d["name"], str):
            raise TypeError("reference and name must be strings")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Refused("not a FlashInfer-Bench definition (name, axes, inputs, outputs, reference): %s" % e)
    var = [k for k, a in axes.items() if a.get("type") == "var"]
    const = {k: int(a["value"]) for k, a in axes.items() if a.get("type") == "const"}
    if len(var) + len(const) != len(axes):
        raise Refused("an axis is neither var nor const")
    entries = []
    for role, group in (("output", outs), ("input", ins)):
        for n, spec in group.items():
            t = FLASHINFER_DTYPE.get(spec.get("dtype"))
            if not spec.get("shape"):
                raise Refused("%s has no shape: scalar inputs and outputs are not imported yet" % n)
            if t is None:
                raise Refused("%s has dtype %s, which temper has no element type for" % (n, spec.get("dtype")))
            if role == "input" and t[0] in "iu":
                raise Refused("%s is an integer tensor: integer inputs (indices) are not imported yet" % n)
            entries.append((ident(n), role, t, [const.get(x, x) for x in spec["shape"]]))
    text = flashinfer_module(d, var, const)
    module = os.path.abspath("reference.py")  # in the scratch folder, the only one it may write
    with open(module, "w") as f:
        f.write(text)
    try:
        mod = load_module(module)
    except Exception as e:
        raise Refused("its reference does not load: %s" % where_raised(e, module))
    sig = [p.name for p in inspect.signature(mod.run).parameters.values()]
    if sig != list(ins):
        raise Refused("run's arguments (%s) are not the inputs in order (%s)" % (", ".join(sig), ", ".join(ins)))
    base = {k: 17 + 2 * i for i, k in enumerate(var)}
    base.update(const)
    notes.append("var axes (scalars): %s, each %d at the bench shape; const axes fixed: %s" %
                 (", ".join(var) or "none", VAR_AXIS_BENCH,
                  ", ".join("%s=%d" % kv for kv in const.items()) or "none"))
    if any(FLASHINFER_DTYPE.get(s["dtype"]) in ("f16", "bf16") for s in ins.values()):
        notes.append("a reference that computes in float32 (x.to(torch.float32)) does so here too")
    consts = dict({k: VAR_AXIS_BENCH for k in var}, **const)
    task = make_task(module, ident(d["name"].lower()), level, d.get("description") or d["name"], entries, {},
                     [ident(n) for n in ins], var, consts, base, torch, notes)
    return task, text


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        serve()
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "import" and sys.argv[2] in ("kernelbench", "flashinfer"):
        import torch
        torch.set_num_threads(1)
        level = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        try:
            if sys.argv[2] == "kernelbench":
                out = {"task": import_problem(sys.argv[3], level, torch)}
            else:
                task, text = import_flashinfer(sys.argv[3], level, torch)
                out = {"task": task, "reference_text": text}
        except Refused as e:
            out = {"refused": str(e)}
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    sys.stderr.write("temper_torch.py: serve, or import kernelbench|flashinfer FILE [LEVEL] (started by temper)\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
