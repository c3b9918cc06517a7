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
