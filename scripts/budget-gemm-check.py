#!/usr/bin/env python3
"""Holds a decode row's GEMM term against the capture's own GEMM kernels.

budget-gemm-check.py OUT [BATCH]: OUT holds budget.json (the record
scripts/device-budget.sh made) and the capture's trace (*.pt.trace.json.gz).
From the trace, independently of greenlight: each profiler step on the
GPU's timeline (gpu_user_annotation ProfilerStep#N), the time of the GEMM
kernels in it (names with gemm, gemv, nvjet, cutlass or xmma), median over
the steps. From the record: the row's GEMMs as the roofline measured them
(each shape's time a call × its calls a step) and the floor, the GEMMs'
excess, the capture's other GPU work and idle against the TPOT.
"""
import glob, gzip, json, re, statistics, sys

out = sys.argv[1]
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
rec = json.load(open(out + "/budget.json"))
fl = next(p["floor"] for p in rec["phases"] if p.get("floor"))
pt = next(p for p in fl["points"] if p["batch"] == batch)
b = pt["budget"]
g = b.get("gemm_excess")
print(f"batch {batch}: TPOT {b['tpot_ms']:.3f} ms, floor {b['floor_ms']:.3f} ms ({fl['gbs_per_gpu']:.0f} GB/s)")
if not g:
    sys.exit("no GEMM term: " + b.get("gemm_excess_unknown", "?"))
pred = sum(s["us"] * s["calls"] for s in g["shapes"]) / 1000
floor_part = sum(s["floor_us"] * s["calls"] for s in g["shapes"]) / 1000
print(f"GEMMs by the roofline: {pred:.3f} ms a step ({floor_part:.3f} of it their floor, {g['ms']:.3f} above it); missing: {g.get('missing')}")
for s in g["shapes"]:
    print(f"  {s['name']:14s} {s['m']}x{s['n']}x{s['k']}: {s['us']:.2f} us a call (floor {s['floor_us']:.2f}) x {s['calls']}")
c = b.get("captured")
if c:
    tot = b["floor_ms"] + g["ms"] + c["other_ms"] + c["idle_ms"]
    print(f"captured step {c['step_ms']:.3f} ms ({c['gap_pct']:+.1f}% of the TPOT): floor {b['floor_ms']:.3f} + GEMMs {g['ms']:.3f} + other {c['other_ms']:.3f} + idle {c['idle_ms']:.3f} = {tot:.3f} ms; against the TPOT {100*(tot-b['tpot_ms'])/b['tpot_ms']:+.1f}%")
gemm = re.compile(r"gemm|gemv|nvjet|cutlass|xmma", re.I)
for path in glob.glob(out + "/*.pt.trace.json.gz"):
    ev = json.load(gzip.open(path))["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "gpu_user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"))
    kern = [e for e in ev if e.get("cat") == "kernel"]
    names = {}
    per = []
    for s0, s1 in steps:
        t = 0.0
        for k in kern:
            if s0 <= k["ts"] < s1 and gemm.search(k["name"]):
                t += k["dur"]
                names[k["name"][:60]] = names.get(k["name"][:60], 0) + k["dur"]
        per.append(t / 1000)
    if per:
        med = statistics.median(per)
        print(f"trace {path.split('/')[-1]}: {len(per)} steps, GEMM kernels {med:.3f} ms a step (median) against the roofline's {pred:.3f} ms: {100*(pred-med)/med:+.1f}%")
        for n, t in sorted(names.items(), key=lambda x: -x[1])[:6]:
            print(f"    {t/1000/len(per):8.3f} ms a step  {n}")
