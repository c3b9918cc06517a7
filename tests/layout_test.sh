#!/usr/bin/env bash
# layout_test.sh: the source tree's layout rules. Every src/**/*.c has at most 800 lines and no
# function of more than 100, and no two files of src/ call each other in a loop: from `nm` of the
# object files of every target the build makes from src/ (libtemper's objects, the gym's library,
# the binaries with the CLI and the MCP server, the worker), "A calls a function defined in B"
# makes an edge A -> B, and any directed cycle between different files fails the test, naming the
# files and the functions that close it. The core, libtemper (temper_objects), calls nothing
# defined only in the front ends' libraries (the gym's temper_serve, temper_agent, temper_mcp,
# temper_report); include/temper holds exactly the headers CMake installs (TEMPER_PUBLIC_HEADERS),
# and those include only each other and system or dependency headers (<...>); no header of src/ or
# include/temper includes itself again through others (an include circle).
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

# ---- functions over 100 lines ----
# A function runs from its line that is "{" at column 0 to its line that is "}" at column 0, both
# counted, and is named by the identifier before the first "(" of the lines above its "{". None
# may pass MAX_FUNCTION_LINES: a longer one is cut at its phases.
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

long_count = 0
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in sorted(files):
        if not name.endswith(".c"):
            continue
        path = os.path.join(root, name)
        rel = os.path.relpath(path, src)
        for line, func, length in function_lengths(path):
            if length > MAX_FUNCTION_LINES:
                print(f"{rel}:{line} {func}: {length} lines, over the limit of {MAX_FUNCTION_LINES}")
                long_count += 1
                failures += 1
print(f"layout: {long_count} function{'' if long_count == 1 else 's'} over {MAX_FUNCTION_LINES} lines")

# ---- the object files (every target's, not only libtemper's) ----
# Every object file the build made from a file of src/, named by that file: CMake keeps a target's
# objects under CMakeFiles/<target>.dir/<source path>.o, so every such folder is read, whatever the
# targets are called (temper_objects, the gym's library, the binaries). A source compiled into two
# targets is one file here. At least 10 of libtemper's objects must be there, or nothing was built.
# Where CMake lists a target's objects (its DependInfo.cmake), an object it does not list is left
# from a build before its file moved to another target, and is not read.
import re
def listed_objects(target_dir):
    info = os.path.join(target_dir + ".dir", "DependInfo.cmake")
    if not os.path.exists(info):
        return None
    with open(info) as f:
        return {os.path.basename(target_dir) + ".dir/" + o for o in re.findall(r'"CMakeFiles/[^"]*?\.dir/([^"]+\.o)"', f.read())}
listed = {}
objects = {}
targets = {}  # target -> its object files from src/
for root, dirs, files in os.walk(build):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(root, name)
        if not name.endswith(".c.o") or ".dir" + os.sep not in path:
            continue
        target_dir, rel = path.split(".dir" + os.sep, 1)
        rel = rel[: -len(".o")]
        if not rel.startswith("src" + os.sep) or not os.path.exists(os.path.join(src, rel)):
            continue  # a test's or a benchmark's, or one left from a file since removed
        if target_dir not in listed:
            listed[target_dir] = listed_objects(target_dir)
        if listed[target_dir] is not None and os.path.basename(target_dir) + ".dir/" + rel + ".o" not in listed[target_dir]:
            continue  # left from a file since moved to another target
        targets.setdefault(os.path.basename(target_dir), []).append(rel)
        objects.setdefault(rel, path)
if len(set(targets.get("temper_objects", []))) < 10:
    print(f"layout_test: found {len(targets.get('temper_objects', []))} object files of temper_objects under {build}; build it first")
    sys.exit(1)

defined = {}  # symbol -> the file defining it
defines = {}  # file -> the symbols it defines
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
            defines.setdefault(rel, set()).add(sym)
    calls[rel] = used

# ---- the core calls no front end ----
# A symbol defined by an object of a front end's library and by none of libtemper's, used by one
# of libtemper's objects, would make libtemper need that library.
FRONT_ENDS = ("temper_serve", "temper_agent", "temper_mcp", "temper_report")
core_files = set(targets["temper_objects"])
core_syms = set().union(*(defines.get(rel, set()) for rel in core_files))
found_fronts = [t for t in FRONT_ENDS if targets.get(t)]
if not found_fronts:
    print(f"layout_test: none of the front ends' libraries ({', '.join(FRONT_ENDS)}) under {build}; build them first")
    sys.exit(1)
front_only = {}  # symbol -> (library, file) of a front end's that defines it
for t in found_fronts:
    for rel in targets[t]:
        if rel in core_files:
            continue
        for sym in defines.get(rel, set()) - core_syms:
            front_only.setdefault(sym, (t, rel))
for rel in sorted(core_files):
    for sym in sorted(calls.get(rel, set()) & set(front_only)):
        lib, where = front_only[sym]
        print(f"{rel} (libtemper) uses {sym} of {where} ({lib}): the core must not call a front end")
        failures += 1

# ---- the installed headers ----
# CMake installs TEMPER_PUBLIC_HEADERS one by one; include/temper holds those and no other, and
# each includes only installed headers ("temper/x.h" of that list) and <...> ones.
with open(os.path.join(src, "CMakeLists.txt")) as f:
    cmake = f.read()
m = re.search(r"set\(TEMPER_PUBLIC_HEADERS([^)]*)\)", cmake)
installed = sorted(os.path.basename(h) for h in m.group(1).split()) if m else []
present = sorted(n for n in os.listdir(os.path.join(src, "include", "temper")) if n.endswith(".h"))
if not installed:
    print("CMakeLists.txt: no set(TEMPER_PUBLIC_HEADERS ...) list of the installed headers")
    failures += 1
for name in sorted(set(present) - set(installed)):
    print(f"include/temper/{name}: not installed (not in TEMPER_PUBLIC_HEADERS): move it beside its module in src/")
    failures += 1
for name in sorted(set(installed) - set(present)):
    print(f"TEMPER_PUBLIC_HEADERS names temper/{name}, which include/temper lacks")
    failures += 1
for name in present:
    with open(os.path.join(src, "include", "temper", name)) as f:
        for number, line in enumerate(f, 1):
            inc = re.match(r'\s*#\s*include\s*"([^"]*)"', line)
            if inc and not (inc.group(1).startswith("temper/") and inc.group(1)[len("temper/"):] in installed):
                print(f"include/temper/{name}:{number}: includes \"{inc.group(1)}\", which is not an installed header")
                failures += 1

# ---- no include circle ----
# The headers of src/ and include/temper, with an edge for each quoted #include (resolved beside
# the header, then under src/, then under include/): a header that reaches itself again through
# others is a circle, which include guards hide from the compiler but not from a reader.
headers = set()
for root, _, names in os.walk(os.path.join(src, "src")):
    headers.update(os.path.relpath(os.path.join(root, n), src) for n in names if n.endswith(".h"))
headers.update(os.path.join("include", "temper", n) for n in present)
def resolve_include(frm, inc):
    for base in (os.path.dirname(frm), "src", "include"):
        p = os.path.normpath(os.path.join(base, inc))
        if p in headers:
            return p
    return None
includes = {}
for h in sorted(headers):
    with open(os.path.join(src, h), errors="replace") as f:
        for line in f:
            inc = re.match(r'\s*#\s*include\s*"([^"]*)"', line)
            target = inc and resolve_include(h, inc.group(1))
            if target and target != h:
                includes.setdefault(h, []).append(target)
state = {}  # header -> 1 while on the current path, 2 once done
def include_circle(h, path):
    state[h] = 1
    path.append(h)
    for t in includes.get(h, []):
        if state.get(t) == 1:
            return path[path.index(t):] + [t]
        if t not in state:
            found = include_circle(t, path)
            if found:
                return found
    path.pop()
    state[h] = 2
    return None
for h in sorted(headers):
    if h not in state:
        circle = include_circle(h, [])
        if circle:
            print("include circle: " + " -> ".join(circle))
            failures += 1
        for k in state:  # a search that stopped at a circle leaves its path finished
            state[k] = 2

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
print(f"layout: {len(objects)} object files of {len(targets)} targets ({', '.join(sorted(targets))}), "
      f"no file over {MAX_LINES} lines, no call loop; libtemper calls none of {', '.join(found_fronts)}; "
      f"{len(installed)} installed headers, including only each other; no include circle among "
      f"{len(headers)} headers")
EOF
