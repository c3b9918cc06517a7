"""temper_triton.py: compiles a Triton candidate ahead of time, for temper's compile process.

temper-worker compile runs this file with the configured interpreter (TEMPER_PYTHON), confined
before the interpreter starts (docs/candidate.md, "Triton"): it may read the interpreter's own
folders, the helper and its scratch folder, write only the scratch folder, and run only the
system's programs and those of the interpreter's environment (Triton runs its own ptxas).

It reads one JSON request on standard input:
    {"probe": true}                         -> {"ok": true, "triton": "3.6.0"}
or
    {"source": TEXT, "arch": 90,
     "kernels": [{"name": K, "params": [NAME, ...], "signature": {NAME: TYPE, ...},
                  "constexprs": {NAME: TEXT, ...}}],
     "num_warps": 4, "num_stages": 3}
and writes one JSON object on standard output: {"ok": true, "triton": VERSION, "binary": BASE64}
(temper's container, below) or {"ok": false, "verdict": "compile_error" | "invalid", "message": M}.

The container is what the CUDA backend loads (src/device/cuda_triton.c):
    b"TEMPER-TRITON 1\\n" + header JSON + b"\\n" + the cubins one after another,
the header holding each kernel's name, launch metadata and the offset and size of its cubin.
"""
import base64
import importlib.util
import json
import os
import sys
import traceback

MAGIC = b"TEMPER-TRITON 1\n"
CANDIDATE = "temper_candidate.py"


def fail(verdict, message):
    json.dump({"ok": False, "verdict": verdict, "message": message}, sys.stdout)
    return 1


def constexpr_value(text):
    """A knob's text as the value Triton folds: an integer, a real number, a boolean, else text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text in ("True", "False"):
        return text == "True"
    return text


def candidate_error(exc):
    """The candidate's own line of a traceback, with the exception, for the compile log."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.basename(frame.filename) == CANDIDATE:
            where = "line %d: " % frame.lineno
    text = str(exc)
    if isinstance(exc, SyntaxError) and exc.lineno:
        where, text = "line %d: " % exc.lineno, exc.msg  # its str() names the scratch file
    return "%s%s: %s" % (where, type(exc).__name__, text)


def load_candidate(source):
    """Imports the candidate as a module from the scratch folder (Triton reads a kernel's source
    back from its file)."""
    path = os.path.join(os.getcwd(), CANDIDATE)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("temper_candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["temper_candidate"] = module
    spec.loader.exec_module(module)
    return module


def compile_kernel(triton, module, want, arch, options):
    fn = getattr(module, want["name"], None)
    if not isinstance(fn, triton.runtime.jit.JITFunction):
        return None, ("invalid", "%s is not a @triton.jit function of the candidate" % want["name"])
    if list(fn.arg_names) != list(want["params"]):
        return None, ("invalid", "kernel %s's parameters are (%s) in Python but temper read (%s)" %
                      (want["name"], ", ".join(fn.arg_names), ", ".join(want["params"])))
    signature = dict(want["signature"])
    constexprs = {}
    for name, text in want["constexprs"].items():
        signature[name] = "constexpr"
        constexprs[name] = constexpr_value(text)
    for name in fn.arg_names:
        if name not in signature:
            return None, ("invalid", "kernel %s: parameter %s is a tl.constexpr with no knob to give it" %
                          (want["name"], name))
    signature = {name: signature[name] for name in fn.arg_names}
    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=constexprs)
    target = triton.backends.compiler.GPUTarget("cuda", arch, 32)
    try:
        compiled = triton.compile(src, target=target, options=options)
    except Exception as exc:  # Triton's CompilationError and what the candidate's code raises
        return None, ("compile_error", "kernel %s: %s" % (want["name"], candidate_error(exc)))
    meta = compiled.metadata
    for what, bad in (("num_ctas", meta.num_ctas != 1), ("launch_cooperative_grid", meta.launch_cooperative_grid),
                      ("launch_pdl", meta.launch_pdl)):
        if bad:
            return None, ("invalid", "kernel %s needs %s (%s), which temper does not launch" %
                          (want["name"], what, getattr(meta, what)))
    head = {key: getattr(meta, key) for key in ("name", "num_warps", "num_ctas", "shared", "global_scratch_size",
                                                 "global_scratch_align", "profile_scratch_size",
                                                 "profile_scratch_align")}
    head["kernel"] = want["name"]
    return (head, compiled.asm["cubin"]), None


def main():
    req = json.load(sys.stdin)
    try:
        import triton
        import triton.backends.compiler
        import triton.compiler
    except Exception as exc:
        return fail("unavailable", "cannot import triton: %s" % exc)
    if req.get("probe"):
        json.dump({"ok": True, "triton": triton.__version__}, sys.stdout)
        return 0
    try:
        module = load_candidate(req["source"])
    except Exception as exc:
        return fail("compile_error", "the candidate does not load: " + candidate_error(exc))
    options = {"num_warps": int(req.get("num_warps", 4)), "num_stages": int(req.get("num_stages", 3))}
    heads, blobs, offset = [], [], 0
    for want in req["kernels"]:
        done, err = compile_kernel(triton, module, want, int(req["arch"]), options)
        if err:
            return fail(*err)
        head, cubin = done
        head["offset"], head["size"] = offset, len(cubin)
        offset += len(cubin)
        heads.append(head)
        blobs.append(cubin)
    header = json.dumps({"triton": triton.__version__, "kernels": heads}, sort_keys=True).encode()
    binary = MAGIC + header + b"\n" + b"".join(blobs)
    json.dump({"ok": True, "triton": triton.__version__, "binary": base64.b64encode(binary).decode()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
