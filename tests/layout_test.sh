#!/usr/bin/env bash
# layout_test.sh: the source tree's layout rules. Every src/**/*.c has at most 800 lines, and no
# two files of the library call each other in a loop: from `nm` of the library's object files,
# "A calls a function defined in B" makes an edge A -> B, and any directed cycle between different
# files fails the test, naming the files and the functions that close it.
# usage: layout_test.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
command -v python3 >/dev/null || { echo "layout_test: python3 is needed" >&2; exit 1; }
command -v nm >/dev/null || { echo "layout_test: nm is needed" >&2; exit 1; }

exec python3 - "$build" "$src" <<'EOF'
import os, subprocess, sys

build, src = sys.argv[1], sys.argv[2]
MAX_LINES = 800
failures = 0

# Lines of every source file.
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in sorted(files):
        if not name.endswith(".c"):
            continue
        path = os.path.join(root, name)
        with open(path, "rb") as f:
            lines = f.read().count(b"\n")
        if lines > MAX_LINES:
            print(f"{os.path.relpath(path, src)}: {lines} lines, over the limit of {MAX_LINES}")
            failures += 1

# ---- Functions over 100 lines (issue 36) ---------------------------------------------------
# A function runs from its line that is "{" at column 0 to its line that is "}" at column 0, both
# counted, and is named by the identifier before the first "(" of the lines above its "{". None
# may pass MAX_FUNCTION_LINES, except those listed in tests/long_functions.txt ("PATH NAME LINES"),
# each at most its listed length: a listed function may not grow, and the list must shrink to
# empty. A listed function that is gone or short enough is said, so that its line is removed.
MAX_FUNCTION_LINES = 100

def function_lengths(path):
    """(line of its "{", name, lines) of every function of a C file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    found, start = [], None
    for i, line in enumerate(lines):
        if line.startswith("{"):
            start = i
        elif line.startswith("}") and start is not None:
            head, j = "", start - 1
            while j >= 0:
                above = lines[j].rstrip()
                if not above or above.endswith((";", "}", "*/")) or above.startswith(("#", "/*", " *")):
                    break
                head = above + " " + head
                j -= 1
            paren = head.find("(")
            words = head[:paren].replace("*", " ").split() if paren > 0 and "=" not in head[:paren] else []
            if words:
                found.append((start + 1, words[-1], i - start + 1))
            start = None
    return found

allowed = {}  # (path, name) -> the lines it may have
allow_path = os.path.join(src, "tests", "long_functions.txt")
if os.path.exists(allow_path):
    with open(allow_path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 3 or not line[2].isdigit():
                print(f"tests/long_functions.txt:{number}: not 'PATH NAME LINES'")
                failures += 1
                continue
            allowed[(line[0], line[1])] = int(line[2])

seen, long_count = set(), 0
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in sorted(files):
        if not name.endswith(".c"):
            continue
        path = os.path.join(root, name)
        rel = os.path.relpath(path, src)
        for line, func, length in function_lengths(path):
            limit = allowed.get((rel, func))
            seen.add((rel, func))
            if length > MAX_FUNCTION_LINES:
                long_count += 1
            if limit is None and length > MAX_FUNCTION_LINES:
                print(f"{rel}:{line} {func}: {length} lines, over the limit of {MAX_FUNCTION_LINES}")
                failures += 1
            elif limit is not None and length > limit:
                print(f"{rel}:{line} {func}: {length} lines, grown past the {limit} tests/long_functions.txt "
                      "allows: cut it at its phases instead")
                failures += 1
            elif limit is not None and length <= MAX_FUNCTION_LINES:
                print(f"note: {rel}:{line} {func} has {length} lines now: remove its line from "
                      "tests/long_functions.txt")
for rel, func in sorted(set(allowed) - seen):
    print(f"note: {rel} {func} of tests/long_functions.txt is gone: remove its line")
print(f"layout: {long_count} function{'' if long_count == 1 else 's'} over {MAX_FUNCTION_LINES} lines, "
      f"{len(allowed)} listed in tests/long_functions.txt")
# ---- end of functions over 100 lines --------------------------------------------------------

# The library's object files, named by their source file.
marker = os.sep + "temper_objects.dir" + os.sep
objects = {}
for root, _, files in os.walk(build):
    for name in files:
        path = os.path.join(root, name)
        if marker in path and name.endswith(".c.o"):
            rel = path.split(marker, 1)[1][: -len(".o")]
            if os.path.exists(os.path.join(src, rel)):  # not one left from a file since removed
                objects[rel] = path
if len(objects) < 10:
    print(f"layout_test: found {len(objects)} object files of temper_objects under {build}; build it first")
    sys.exit(1)

defined = {}  # symbol -> the file defining it
calls = {}    # file -> symbols it uses but does not define
for rel, path in sorted(objects.items()):
    out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
    used = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):
            used.add(sym)
        elif kind.isupper():
            defined.setdefault(sym, rel)
    calls[rel] = used

edges = {}  # file -> {file it calls: [symbols]}
for rel, used in calls.items():
    for sym in sorted(used):
        other = defined.get(sym)
        if other and other != rel:
            edges.setdefault(rel, {}).setdefault(other, []).append(sym)

# Strongly connected components (Tarjan, iterative); every one of more than one file is a loop.
index, low, on_stack, stack, sccs, counter = {}, {}, set(), [], [], [0]
def strongconnect(v):
    work = [(v, iter(sorted(edges.get(v, {}))))]
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on_stack.add(v)
    while work:
        node, it = work[-1]
        advanced = False
        for w in it:
            if w not in index:
                index[w] = low[w] = counter[0]; counter[0] += 1
                stack.append(w); on_stack.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
                advanced = True
                break
            if w in on_stack:
                low[node] = min(low[node], index[w])
        if advanced:
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
            comp = []
            while True:
                w = stack.pop(); on_stack.discard(w); comp.append(w)
                if w == node:
                    break
            sccs.append(sorted(comp))
for v in sorted(calls):
    if v not in index:
        strongconnect(v)

def cycle_through(start, comp):
    """A shortest cycle from start back to start inside comp (breadth first)."""
    members = set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return None

for comp in sccs:
    if len(comp) < 2:
        continue
    failures += 1
    cycle = cycle_through(comp[0], comp)
    print(f"call loop between {len(comp)} files: {', '.join(comp)}")
    print("  for example: " + " -> ".join(cycle))
    for a, b in zip(cycle, cycle[1:]):
        syms = edges[a][b]
        more = f" and {len(syms) - 3} more" if len(syms) > 3 else ""
        print(f"    {a} calls {', '.join(syms[:3])}{more} of {b}")

if failures:
    sys.exit(1)
print(f"layout: {len(objects)} object files, no file over {MAX_LINES} lines, no call loop")
EOF
