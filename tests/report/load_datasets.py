"""load_datasets.py: loads `temper export` files with Hugging Face datasets' JSON loader, offline.

usage: load_datasets.py FILE:ROWS [FILE:ROWS ...]  (each file must load with exactly ROWS rows; a
file of 0 rows must be empty)
"""
import sys

import datasets

datasets.disable_progress_bars()
failures = 0
for arg in sys.argv[1:]:
    path, rows = arg.rsplit(":", 1)
    if int(rows) == 0:
        # An export with no record is an empty file, which the JSON loader cannot read (it has no
        # columns). Whether a tune's run has an improving step depends on its timings: say so.
        ok = open(path, "rb").read() == b""
        print(("ok   " if ok else "FAIL ") + f"{path} is empty, as an export of no record is (not loaded)")
        failures += not ok
        continue
    ds = datasets.load_dataset("json", data_files=path, split="train")
    ok = ds.num_rows == int(rows)
    print(("ok   " if ok else "FAIL ") + f"datasets loads {path}: {ds.num_rows} rows, columns {sorted(ds.column_names)[:6]}...")
    failures += not ok
sys.exit(1 if failures else 0)
