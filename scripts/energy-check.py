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
from datetime import datetime, timezone


def smi_rows(path):
    out = []
    if not os.path.exists(path):
        return out  # not brought back: the clock is not checked
    for f in csv.reader(open(path)):
        if len(f) < 4:
            continue
        try:
            ts = datetime.strptime(f[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((ts, float(f[1]), float(f[2]), float(f[3])))
        except ValueError:
            continue
    return out


def step_spans(d):
    """The gemm steps' spans as greenlight journaled them, by step (1-based)."""
    def ts(s):
        base, _, frac = s.rstrip("Z").partition(".")
        return datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp() + float("0." + (frac or "0"))
    spans = {}
    for line in open(os.path.join(d, "journal.jsonl")):
        j = json.loads(line)
        if j.get("phase") == "gemm" and j.get("kind") in ("step-start", "step-end"):
            spans.setdefault(j.get("step", 0) + 1, {})[j["kind"]] = ts(j["t"])
    return spans


def main(d):
    rec = json.load(open(os.path.join(d, "energy.json")))
    spans = step_spans(d) if os.path.exists(os.path.join(d, "journal.jsonl")) else {}
    smi = smi_rows(os.path.join(d, "smi.csv"))
    bad = 0
    print("step  n     shell J  self J   greenlight J  vs shell  vs self  basis     smi MHz  greenlight MHz (samples)  diff   gap s  gap W")
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
        # The shell's reads miss the step's first and last moments (its
        # counter script's Python start-up, the end's detection): the
        # difference over that gap, as a power, says whether greenlight's
        # extra energy is those moments (an idle GPU's tens of watts) or an
        # error.
        gap, gap_w, smi_gap_j = float("nan"), float("nan"), float("nan")
        sp = spans.get(step, {})
        if shell_j and "s0" in v and "step-start" in sp and "step-end" in sp:
            gap = (v["s0"] - sp["step-start"]) + (sp["step-end"] - v["s1"])
            gap_w = (gl_j - shell_j) / gap if gap > 0 else float("nan")
            # nvidia-smi's 100 ms power over the same two gaps, integrated.
            in_gap = [p for (ts, u, c, p) in smi if sp["step-start"] <= ts <= v["s0"] or v["s1"] <= ts <= sp["step-end"]]
            if in_gap:
                smi_gap_j = sum(in_gap) / len(in_gap) * gap
                dg = (gl_j - shell_j - smi_gap_j) / shell_j * 100
                print(f"   step {step}: shell J + nvidia-smi's power over the gaps ({len(in_gap)} samples, {smi_gap_j:.1f} J) = {shell_j + smi_gap_j:.1f} J; greenlight {dg:+.2f}% off that")
        print(f"{step}  {v.get('n'):5}  {shell_j or 0:8.1f} {self_j:8.1f}  {gl_j:10.1f}  {ds:+6.2f}%  {de:+6.2f}%  {g.get('energy_from', '?'):9} {smi_mhz:7.1f}  {gl_mhz:7.1f} ({g.get('sm_samples', 0)})  {dc:+5.2f}%  [{len(busy)} smi samples]  {gap:5.3f}  {gap_w:5.0f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
