"""Large files: wall time and peak memory of one file as it grows, to check that both stay linear in
its size and that the default `max-file-size` keeps one process under 1 GiB.

    python tests/benchmarks/bench_large_file.py                  # 0.25, 0.5, 1 and 1.43 MiB
    python tests/benchmarks/bench_large_file.py --sizes 0.1 0.2  # other sizes, in MiB

Each file is generated code at its densest for mllint: training functions that never clear their
gradients and sum their loss with its graph (two findings each, ML001 and ML006, every rule on), so
every rule's per-finding work and every fix is exercised. Each size runs in a fresh process
(`--no-cache --isolated -j 1 --select ALL`); the peak is that process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FUNCTION = '''
def train_{i}(model, loader, optimizer, loss_fn):
    total = 0
    for x, y in loader:
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        total += loss
    return total
'''


def generate(path: Path, size: int) -> int:
    parts, length, i = ["import torch\n"], len("import torch\n"), 0
    while length < size:
        parts.append(FUNCTION.format(i=i))
        length += len(parts[-1])
        i += 1
    path.write_text("".join(parts), encoding="utf-8")
    return i


def measure(path: Path) -> tuple:
    """(wall seconds, peak resident MiB, findings) of one run in a fresh process."""
    report = path.with_suffix(".json")
    with open(report, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "mllint", "--no-cache", "--isolated", "-j", "1",
                                 "--select", "ALL", "--format", "json", str(path)],
                                stdout=out, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)  # the child's own rusage: its peak, no one else's
        wall = time.perf_counter() - start
    return wall, usage.ru_maxrss / 1024, report.read_bytes().count(b'"code":')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.25, 0.5, 1.0, 1.43], help="file sizes in MiB")
    args = parser.parse_args()
    print("| file | functions | findings | wall s | peak MiB | s per MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        for mib in sorted(args.sizes):
            path = Path(folder) / f"dense_{mib}.py"
            functions = generate(path, int(mib * 1024 * 1024))
            wall, peak, findings = measure(path)
            print(f"| {mib:g} MiB | {functions:,} | {findings:,} | {wall:.1f} | {peak:.0f} | {wall / mib:.1f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
