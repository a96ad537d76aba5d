#!/usr/bin/env python3
"""A stand-in ``nvidia-smi`` (MOCKED: no GPU on this machine) that prints the recorded samples.

For ``--query-compute-apps`` it reports every process carrying ``$FAKE_SMI_TAG`` in its environment
as holding 40960 MiB on GPU 0, so the guard's matching of GPU pids to its tree is tested for real.
"""

import os
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "samples"
GPU0 = "GPU-5c1e3a04-8f2d-4b7e-9a61-0c2f6d1e7a10"


def tagged_pids(tag: str):
    needle = f"\0FAKE_SMI_TAG={tag}\0".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in b"\0" + handle.read():
                        yield int(entry)
            except OSError:
                continue


if any(arg.startswith("--query-gpu=") for arg in sys.argv):
    sys.stdout.write((SAMPLES / "nvidia-smi-gpus.csv").read_text())
elif any(arg.startswith("--query-compute-apps=") for arg in sys.argv):
    for pid in tagged_pids(os.environ.get("FAKE_SMI_TAG", "")):
        print(f"{pid}, {GPU0}, 40960")
    print(f"999999, {GPU0}, 1024")  # a process outside the tree
else:
    sys.exit("fake nvidia-smi: unsupported arguments")
