#!/usr/bin/env bash
# cases_notes_test.sh: keeps the verdict cases' documentation and the margin pairs honest, without a
# device. (1) Every case file that tests/cases/notes.md or tests/cases/README.md names (with
# {a,b} alternatives expanded) exists in tests/cases/opencl or tests/cases/cuda. (2) Every margin
# pair (NAME_margin_plus / NAME_margin_minus, tests/cases/README.md) is whole in each folder, moves
# by +F in the _plus file and -F in the _minus one with the same F (0 < F < 1), and takes atol and
# rtol equal to its task's tolerance in task.json, so that a tolerance change cannot leave a pair
# proving a margin of a tolerance that is no longer the task's.
# usage: cases_notes_test.sh SOURCE_DIR
set -u
src=$1
command -v python3 >/dev/null || { echo "cases_notes_test: python3 is needed" >&2; exit 1; }

exec python3 - "$src" <<'EOF'
import glob, itertools, json, os, re, sys

src = sys.argv[1]
cases = os.path.join(src, "tests", "cases")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


def expand(name):
    """'a_{x,y}_b.cl' -> ['a_x_b.cl', 'a_y_b.cl'] (every brace group, in order)."""
    parts = re.split(r"\{([^{}]*)\}", name)
    fixed, choices = parts[0::2], [p.split(",") for p in parts[1::2]]
    out = []
    for combo in itertools.product(*choices):
        s = fixed[0]
        for c, f in zip(combo, fixed[1:]):
            s += c + f
        out.append(s)
    return out


# (1) names in the two documents' tables
named = 0
for doc in ("notes.md", "README.md"):
    path = os.path.join(cases, doc)
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.startswith("|"):
                continue
            for tok in re.findall(r"[A-Za-z0-9_{},/.*-]+\.(?:cl|cu)\b", line):
                tok = tok.lstrip(",.")
                for name in expand(tok):
                    # a pattern, or prose about a task's own baseline ("the task's naive.cu")
                    if name.startswith("*") or name in ("naive.cl", "naive.cu"):
                        continue
                    named += 1
                    if "/" in name:  # a path from the repository's root
                        if not os.path.exists(os.path.join(src, name)):
                            fail("%s:%d names %s, which is not in the repository" % (doc, lineno, name))
                        continue
                    folder = "opencl" if name.endswith(".cl") else "cuda"
                    if not os.path.exists(os.path.join(cases, folder, name)):
                        fail("%s:%d names %s, which is not in tests/cases/%s" % (doc, lineno, name, folder))

# (2) margin pairs
tolerance = {}
for tj in glob.glob(os.path.join(src, "tasks", "*", "*", "task.json")):
    with open(tj) as f:
        t = json.load(f)
    tolerance[t["name"]] = t["tolerance"]

shift_re = re.compile(r"#define SHIFT\(v\) \(\(v\) ([+-]) ([0-9.]+)f \* \(([0-9.e+-]+)f \+ ([0-9.e+-]+)f \* fabsf?\(v\)\)\)")
pairs = 0
for folder, ext in (("opencl", ".cl"), ("cuda", ".cu")):
    for plus in sorted(glob.glob(os.path.join(cases, folder, "*_margin_plus" + ext))):
        minus = plus.replace("_margin_plus", "_margin_minus")
        if not os.path.exists(minus):
            fail("%s has no _minus twin" % os.path.basename(plus))
            continue
        pairs += 1
        got = []
        for path in (plus, minus):
            with open(path) as f:
                text = f.read()
            m = shift_re.search(text)
            task = re.search(r"@temper task (\w+)", text)
            if not m or not task:
                fail("%s: no SHIFT(v) line of the margin form, or no task" % os.path.basename(path))
                break
            if "@expect correct" not in text:
                fail("%s: a margin case must expect correct" % os.path.basename(path))
            sign, frac, atol, rtol = m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))
            want = tolerance.get(task.group(1))
            if want is None:
                fail("%s: no task %s" % (os.path.basename(path), task.group(1)))
            elif atol != want["atol"] or rtol != want["rtol"]:
                fail("%s: moves by the tolerance atol %g, rtol %g; task %s has atol %g, rtol %g"
                     % (os.path.basename(path), atol, rtol, task.group(1), want["atol"], want["rtol"]))
            if not 0 < frac < 1:
                fail("%s: F = %g is not between 0 and 1" % (os.path.basename(path), frac))
            got.append((sign, frac))
        if len(got) == 2 and (got[0][0], got[1][0], got[0][1]) != ("+", "-", got[1][1]):
            fail("%s: the pair must move by +F and -F with one F, not %s" % (os.path.basename(plus), got))

print("%d case names in the documents, %d margin pairs, %d failures" % (named, pairs, failures))
sys.exit(1 if failures or not named or not pairs else 0)
EOF
