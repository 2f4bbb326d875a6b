"""Benchmark: what `pip install offsetkeeper[...]` costs, and how fast the command starts.

    .venv/bin/python bench/install_size.py [--wheel dist/offsetkeeper-*.whl]
                                           [--extras core,spark,ui,stores,zk,all] [--runs 7]

Builds the wheel (`python -m build --wheel --no-isolation`, Maven included) unless --wheel
names one, then for each extra: a fresh venv (`python3 -m venv`, with its pip), the wheel
installed with that extra (wall time of `pip install`, pip's cache warm), and the venv's size on
disk minus an empty venv's. The core venv also times `offsetkeeper --version` and `--help` as
fresh processes (median of --runs after one warm-up; `farm-bench` when it is installed, else
this script's own clock), with CPU seconds beside the wall seconds: on a loaded machine the
wall time measures the load. Prints one JSON object. Budgets (issue 29): core ≤ 80 MB,
--version ≤ 0.3 s, --help ≤ 0.6 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = {"core_mb": 80, "version_s": 0.3, "help_s": 0.6}


def du_mb(path: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return round(total / 1e6, 1)


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(out), str(ROOT)], check=True, capture_output=True)
    return next(out.glob("offsetkeeper-*.whl"))


def new_venv(path: Path) -> Path:
    subprocess.run(["python3", "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def time_command(argv: list[str], runs: int) -> dict:
    """Median wall and CPU seconds of `argv` as a fresh process."""
    if shutil.which("farm-bench"):
        out = subprocess.run(["farm-bench", "-n", str(runs), "--", *argv], capture_output=True,
                             text=True, check=True).stdout
        got = {}
        for key in ("wall", "cpu"):
            m = re.search(rf"A {key} s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out)
            got[f"{key}_s"] = float(m.group(2))
            got[f"{key}_s_min"] = float(m.group(1))
        got["tool"] = "farm-bench"
        return got
    walls, cpus = [], []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:
            walls.append(wall)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3),
            "wall_s_min": round(min(walls), 3), "tool": "perf_counter"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path)
    ap.add_argument("--extras", default="core,spark,ui,stores,zk,all")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="offsetkeeper-install-bench-") as tmp:
        work = Path(tmp)
        wheel = args.wheel or build_wheel(work / "dist")
        empty = work / "empty"
        new_venv(empty)
        base = du_mb(empty)
        result: dict = {"wheel": wheel.name, "wheel_mb": round(wheel.stat().st_size / 1e6, 1),
                        "empty_venv_mb": base, "budget": BUDGET, "extras": {}}
        for extra in args.extras.split(","):
            venv = work / f"venv-{extra}"
            py = new_venv(venv)
            spec = str(wheel) if extra == "core" else f"{wheel}[{extra}]"
            t0 = time.perf_counter()
            subprocess.run([str(py), "-m", "pip", "install", "--quiet", spec], check=True)
            seconds = time.perf_counter() - t0
            entry = {"install_s": round(seconds, 1), "venv_mb": du_mb(venv),
                     "on_top_of_empty_mb": round(du_mb(venv) - base, 1)}
            if extra == "core":
                jvm = next(venv.glob("lib/python*/site-packages/offsetkeeper/_jvm"), None)
                entry["of_which_jvm_mb"] = du_mb(jvm) if jvm else 0.0
                exe = str(venv / "bin" / "offsetkeeper")
                entry["version"] = time_command([exe, "--version"], args.runs)
                entry["help"] = time_command([exe, "--help"], args.runs)
            result["extras"][extra] = entry
            print(json.dumps({extra: entry}), file=sys.stderr)
            if extra != "core":
                shutil.rmtree(venv)
        core = result["extras"].get("core")
        if core:
            result["within_budget"] = {
                "core_mb": core["on_top_of_empty_mb"] <= BUDGET["core_mb"],
                "version_s": core["version"]["wall_s"] <= BUDGET["version_s"],
                "help_s": core["help"]["wall_s"] <= BUDGET["help_s"],
            }
        result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
