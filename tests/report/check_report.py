"""check_report.py: checks `temper report` pages against the store they came from, and the
screenshot headless Chromium took of one.

usage: check_report.py run DB RUN_ID HTML PNG WIDTH HEIGHT
       check_report.py task DB TASK HTML
       check_report.py bench BENCH_JSON HTML

run: every evaluation of the run is a point of the roofline and of the convergence chart, at
its arithmetic intensity (the task's FLOP over byte models, from the stored timing) and its
achieved GFLOP/s, placed on the plot's axes as the frame's attributes say; the baseline is
marked at its own time; the roof is the device's calibration in the store; every evaluation is
a table row; the best kernel's diff is there; the page loads nothing from outside and has no
script; and the PNG has the window's size and is not blank (many distinct colours).
task: every evaluation of the task on the device is on the page, untimed ones marked as such.
bench: the fast_p dots are the bench's fast_p values, placed on the axes.
Prints one line per check and exits 1 if any failed.
"""
import json
import math
import sqlite3
import struct
import sys
import zlib
from html.parser import HTMLParser

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def close(a, b, rel=1e-6):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


class Page(HTMLParser):
    """Collects every element with its attributes, the svg it is in, and what is referenced."""

    def __init__(self):
        super().__init__()
        self.elements = []   # (tag, attrs, svg id, plot frame attrs)
        self.svg = None
        self.frame = None
        self.scripts = 0
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
        if tag == "g" and a.get("class") == "plot":
            self.frame = a
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href"):
            if k in a and not a[k].startswith("#") and not a[k].startswith("data:"):
                self.external.append(a[k])
        self.elements.append((tag, a, self.svg, self.frame))

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg, self.frame = None, None

    def find(self, svg=None, cls=None, tag=None):
        out = []
        for t, a, s, fr in self.elements:
            if svg is not None and s != svg:
                continue
            if cls is not None and cls not in a.get("class", "").split():
                continue
            if tag is not None and t != tag:
                continue
            out.append((a, fr))
        return out


def frac(fr, axis, v):
    lo, hi, log = float(fr[f"data-{axis}-lo"]), float(fr[f"data-{axis}-hi"]), fr[f"data-{axis}-log"] == "1"
    if log:
        return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return (v - lo) / (hi - lo)


def placed(a, fr, x, y):
    """Whether a circle's centre is where the frame's axes put (x, y), within 0.01 user units."""
    px = float(fr["data-left"]) + frac(fr, "x", x) * float(fr["data-width"])
    py = float(fr["data-top"]) + (1 - frac(fr, "y", y)) * float(fr["data-height"])
    return abs(float(a["cx"]) - px) < 0.01 and abs(float(a["cy"]) - py) < 0.01


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def png_pixels(path):
    """Width, height and the set of distinct colours of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"bit depth {depth}, colour type {ctype}"
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for row in range(h):
        ftype = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + left) & 255
            elif ftype == 2:
                line[i] = (line[i] + up) & 255
            elif ftype == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif ftype == 4:
                pa, pb, pc = abs(up - ul), abs(left - ul), abs(left + up - 2 * ul)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else ul
                line[i] = (line[i] + pred) & 255
        if row % 4 == 0:
            for i in range(0, stride, bpp * 2):
                colours.add(bytes(line[i:i + 3]))
        prev = line
    return w, h, colours


def common(page):
    check(page.scripts == 0, "the page has no script")
    check(not page.external, f"the page loads nothing from outside {page.external[:3]}")


mode = sys.argv[1]
if mode == "run":
    db, run_id, html, png, width, height = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, verdict, median_ms, json_extract(timings, '$[0].flops'), "
                       "json_extract(timings, '$[0].bytes'), json_extract(timings, '$[0].baseline_median_ms'), device_key, "
                       "candidate, coalesce(options, '') FROM evaluations WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
    page = parse(html)
    common(page)
    roof_pts = {int(a["data-eval-id"]): (a, fr) for a, fr in page.find("roofline", "pt", "circle")}
    roof_untimed = {int(a["data-eval-id"]) for a, fr in page.find("roofline", "untimed")}
    timed = [r for r in rows if r[1] == "correct" and (r[2] or 0) > 0]
    check(len(rows) >= 3 and set(roof_pts) | roof_untimed == {r[0] for r in rows},
          f"roofline: every one of the run's {len(rows)} evaluations is a point")
    ok = all(r[0] in roof_pts and close(float(roof_pts[r[0]][0]["data-x"]), r[3] / r[4]) and
             close(float(roof_pts[r[0]][0]["data-y"]), r[3] / (r[2] * 1e6)) for r in timed)
    check(ok, "roofline: each point's x is FLOPs/bytes and y FLOPs/time (GFLOP/s), from the store's timings")
    check(all(placed(a, fr, float(a["data-x"]), float(a["data-y"])) for a, fr in roof_pts.values()),
          "roofline: each point is placed on the log-log axes where its values fall")
    # each configuration (source, options, device) counts with its latest timed evaluation, as
    # `temper best` counts it: a tune's re-timing, not its screening sample of the same code
    latest = {}
    for r in timed:
        latest[(r[7], r[8], r[6])] = r
    best = min(latest.values(), key=lambda r: (r[2], r[0]))
    bests = [a for a, fr in page.find("roofline", "best")]
    check(len(bests) == 1 and int(bests[0]["data-eval-id"]) == best[0], f"roofline: the best ({best[0]}) is marked")
    base = page.find("roofline", "baseline", "rect")
    check(len(base) == 1 and close(float(base[0][0]["data-y"]), best[3] / (best[5] * 1e6))
          and close(float(base[0][0]["data-ms"]), best[5]), "roofline: the baseline is marked at its own time")
    dev = con.execute("SELECT copy_gbs, fma_gflops FROM devices WHERE key = ?", (rows[0][6],)).fetchone()
    roof = page.find("roofline", "roof")
    check(dev and roof and close(float(roof[0][0]["data-mem-gbs"]), dev[0]) and
          close(float(roof[0][0]["data-compute-gflops"]), dev[1]), "roofline: the roof is the device's calibration in the store")
    conv = {int(a["data-eval-id"]): (a, fr) for a, fr in page.find("convergence", "pt", "circle")}
    conv_untimed = {int(a["data-eval-id"]) for a, fr in page.find("convergence", "untimed")}
    order = {r[0]: i + 1 for i, r in enumerate(rows)}
    check(set(conv) | conv_untimed == set(order) and all(
        int(float(conv[i][0]["data-x"])) == order[i] and close(float(conv[i][0]["data-y"]), r[2]) and
        placed(conv[i][0], conv[i][1], order[i], r[2]) for r in timed for i in [r[0]]),
        "convergence: each evaluation at its place in the run and its median time, on the axes")
    lines = page.find("convergence", "best-line")
    check(len(lines) == 1 and int(lines[0][0]["data-run-id"]) == run_id, "convergence: the run's best-so-far line")
    # the line follows the header's rule too, so it ends at the best (a slower re-timing of the
    # screening's fastest point raises it), within 0.01 user units
    end = lines[0][0]["points"].split()[-1].split(",") if lines else ["nan", "nan"]
    fr = lines[0][1] if lines else None
    want = float(fr["data-top"]) + (1 - frac(fr, "y", best[2])) * float(fr["data-height"]) if fr else None
    check(fr is not None and abs(float(end[1]) - want) < 0.01,
          f"convergence: the best-so-far line ends at the best, {best[2]:.4g} ms")
    table_rows = [int(a["data-eval-id"]) for a, fr in page.find(tag="tr") if "data-eval-id" in a]
    check(table_rows == [r[0] for r in rows], "table: one row per evaluation, in order")
    diff = [a for a, fr in page.find(tag="table") if a.get("id") == "diff"]
    check(diff and int(diff[0]["data-added"]) > 0, "the best kernel's source is diffed against the baseline")
    w, h, colours = png_pixels(png)
    check((w, h) == (width, height), f"screenshot {w}x{h}, the window's size")
    check(len(colours) >= 64, f"screenshot not blank: {len(colours)} distinct colours")
elif mode == "task":
    db, task, html = sys.argv[2], sys.argv[3], sys.argv[4]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, verdict, median_ms FROM evaluations WHERE task = ? ORDER BY id", (task,)).fetchall()
    page = parse(html)
    common(page)
    pts = {int(a["data-eval-id"]) for a, fr in page.find("roofline", "pt", "circle")}
    untimed = {int(a["data-eval-id"]) for a, fr in page.find("roofline", "untimed")}
    want_untimed = {r[0] for r in rows if not (r[1] == "correct" and (r[2] or 0) > 0)}
    check(pts | untimed == {r[0] for r in rows} and untimed == want_untimed and want_untimed,
          f"task: all {len(rows)} evaluations on the page, the {len(want_untimed)} without a time marked so")
elif mode == "bench":
    bench, html = json.load(open(sys.argv[2])), sys.argv[3]
    page = parse(html)
    common(page)
    dots = {float(a["data-p"]): (a, fr) for a, fr in page.find("fast-p", "fastp")}
    want = {float(k): v for k, v in bench["suite"]["fast_p"].items()}
    check(set(dots) == set(want) and all(close(float(dots[p][0]["data-y"]), v) and placed(dots[p][0], dots[p][1], p, v)
                                         for p, v in want.items()),
          "bench: each fast_p value is a dot at (p, fast_p) on the axes")
    curve = page.find("fast-p", "fastp-curve")
    check(len(curve) == 1, "bench: the fast_p curve from the tasks' best speedups")
    rows = [a for a, fr in page.find(tag="table") if a.get("id") == "bench-tasks"]
    check(rows and html and open(html).read().count("<tr>") >= len(bench["tasks"]) + 1, "bench: the tasks' table")
sys.exit(1 if failures else 0)
