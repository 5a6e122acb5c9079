#!/usr/bin/env python3
"""Holds greenlight's per-step energy and clock against independent readings.

  scripts/energy-check.py DIR     # what scripts/device-energy.sh left in DIR

Energy: each gemm step's energy_wh (NAME.json's row facts) against the
GPU's counter read by the step itself: as its shell's first and last
commands (shell_j: the step's processes whole), and inside its Python
process after the interpreter started and before it exits (self_j: its
own start-up and teardown left out).
Clock: its sm_mhz against nvidia-smi's 100 ms clocks.sm over the samples
in the step's own span at utilization >= 50 %. Exit 1 when energy is off
by more than 2% or the clock by more than 1%.
"""
import csv, json, os, sys, time
from datetime import datetime


def smi_rows(path):
    out = []
    for f in csv.reader(open(path)):
        if len(f) < 4:
            continue
        try:
            ts = datetime.strptime(f[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((ts, float(f[1]), float(f[2]), float(f[3])))
        except ValueError:
            continue
    return out


def main(d):
    rec = json.load(open(os.path.join(d, "energy.json")))
    smi = smi_rows(os.path.join(d, "smi.csv"))
    bad = 0
    print("step  n     shell J  self J   greenlight J  vs shell  vs self  basis     smi MHz  greenlight MHz (samples)  diff")
    rows = {}
    for r in rec.get("rows", []):
        if r.get("phase") == "gemm":
            rows.setdefault(r.get("step"), [{}, {}])
            rows[r.get("step")][0].update(r.get("values", {}))
            rows[r.get("step")][1].update(r.get("gpu") or {})
    for step, (v, g) in sorted(rows.items()):
        self_j, t0, t1 = v.get("self_j"), v.get("t0"), v.get("t1")
        shell_j = v.get("shell_j")
        gl_j = g.get("energy_wh", 0) * 3600
        busy = [c for (ts, u, c, p) in smi if t0 <= ts <= t1 and u >= 50]
        smi_mhz = sum(busy) / len(busy) if busy else float("nan")
        gl_mhz = g.get("sm_mhz", 0)
        de = (gl_j - self_j) / self_j * 100 if self_j else float("nan")
        ds = (gl_j - shell_j) / shell_j * 100 if shell_j else float("nan")
        dc = (gl_mhz - smi_mhz) / smi_mhz * 100 if busy else float("nan")
        bad += abs(ds) > 2 or abs(dc) > 1
        print(f"{step}  {v.get('n'):5}  {shell_j or 0:8.1f} {self_j:8.1f}  {gl_j:10.1f}  {ds:+6.2f}%  {de:+6.2f}%  {g.get('energy_from', '?'):9} {smi_mhz:7.1f}  {gl_mhz:7.1f} ({g.get('sm_samples', 0)})  {dc:+5.2f}%  [{len(busy)} smi samples]")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
