#!/usr/bin/env python3
"""Holds greenlight's per-step energy and clock against independent readings.

  scripts/energy-check.py DIR     # what scripts/device-energy.sh left in DIR

Energy: each gemm step's energy_wh (NAME.json's row facts) against the
GPU's counter read by the step itself at its start and end (self_j).
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
    print("step  n     self J   greenlight J  diff    basis       smi MHz  greenlight MHz (samples)  diff")
    for r in rec.get("rows", []):
        if r.get("phase") != "gemm":
            continue
        v, g = r.get("values", {}), r.get("gpu") or {}
        self_j, t0, t1 = v.get("self_j"), v.get("t0"), v.get("t1")
        gl_j = g.get("energy_wh", 0) * 3600
        busy = [c for (ts, u, c, p) in smi if t0 <= ts <= t1 and u >= 50]
        smi_mhz = sum(busy) / len(busy) if busy else float("nan")
        gl_mhz = g.get("sm_mhz", 0)
        de = (gl_j - self_j) / self_j * 100 if self_j else float("nan")
        dc = (gl_mhz - smi_mhz) / smi_mhz * 100 if busy else float("nan")
        bad += abs(de) > 2 or abs(dc) > 1
        print(f"{r.get('step')}  {v.get('n'):5}  {self_j:8.1f}  {gl_j:10.1f}  {de:+5.2f}%  {g.get('energy_from', '?'):11} {smi_mhz:7.1f}  {gl_mhz:7.1f} ({g.get('sm_samples', 0)})  {dc:+5.2f}%  [{len(busy)} smi samples]")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
