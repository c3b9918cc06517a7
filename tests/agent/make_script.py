#!/usr/bin/env python3
"""make_script.py: writes a scripted model's script (tests/agent/fake_model.py) from a compact
description, so that the agent's tests can put kernel files into replies.
usage: make_script.py OUT KERNELS_DIR TASKS_DIR JSON
JSON's entries may say "kernel": NAME (a file of KERNELS_DIR, task/NAME for a file of the
softmax task, tasks/PATH for a file under TASKS_DIR): the kernel is put in a fenced block of the reply's content, after "before" and
before "after" (both optional)."""
import json
import os
import sys

out, kdir, tdir, spec = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])


def kernel(name):
    if name.startswith("task/"):
        path = os.path.join(tdir, "L1", "softmax", name[5:])
    elif name.startswith("tasks/"):
        path = os.path.join(tdir, name[6:])
    else:
        path = os.path.join(kdir, name)
    with open(path) as f:
        return f.read()


for role, entries in spec.get("roles", {}).items():
    for e in entries:
        if "kernel" in e:
            e["content"] = e.get("before", "Here is the kernel.\n\n") + "```c\n" + kernel(e.pop("kernel")) + "```\n" + \
                e.get("after", "")
            e.pop("before", None)
            e.pop("after", None)
with open(out, "w") as f:
    json.dump(spec, f, indent=1)
