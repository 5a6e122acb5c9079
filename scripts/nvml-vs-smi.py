#!/usr/bin/env python3
"""Compares greenlight's NVML readings with nvidia-smi's, taken at the same time.

  scripts/nvml-vs-smi.py DIR      # DIR holds nvml-N.json and smi-N.csv pairs

nvml-N.json: `greenlight gpus --gpu nvml --json`; smi-N.csv:
`nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu --format=csv,noheader,nounits`.
Memory total must match exactly; the rest within tolerances that allow for
the two reads being a few hundred milliseconds apart. Exit 1 on a mismatch.
"""
import glob
import json
import os
import sys

TOL = {"memory_used_mib": 512, "utilization_gpu": 15, "power_w": 60, "temperature_c": 3}


def main(d):
    bad, rows = 0, []
    for nv_path in sorted(glob.glob(os.path.join(d, "nvml-*.json"))):
        n = nv_path.rsplit("-", 1)[1].split(".")[0]
        smi_path = os.path.join(d, f"smi-{n}.csv")
        if not os.path.exists(smi_path):
            continue
        nv = {}
        for line in open(nv_path):
            if line.strip():
                o = json.loads(line)
                nv[o["index"]] = o
        for line in open(smi_path):
            f = [x.strip() for x in line.split(",")]
            if len(f) < 7:
                continue
            idx = int(f[0])
            smi = {"name": f[1], "memory_total_mib": float(f[2]), "memory_used_mib": float(f[3]),
                   "utilization_gpu": float(f[4]), "power_w": float(f[5]), "temperature_c": float(f[6])}
            g = nv.get(idx)
            if g is None:
                print(f"round {n} GPU {idx}: in nvidia-smi, not in greenlight")
                bad += 1
                continue
            line_out = [f"round {n} GPU {idx} {smi['name']}:"]
            if g["name"] != smi["name"]:
                line_out.append(f"name {g['name']!r} != {smi['name']!r}")
                bad += 1
            if abs(g["memory_total_mib"] - smi["memory_total_mib"]) > 0.5:
                line_out.append(f"MEMORY TOTAL {g['memory_total_mib']} != {smi['memory_total_mib']} MiB")
                bad += 1
            else:
                line_out.append(f"mem total {smi['memory_total_mib']:.0f} MiB =")
            for k, tol in TOL.items():
                a, b = g[k], smi[k]
                if isinstance(a, str):
                    line_out.append(f"{k} greenlight {a}")
                    continue
                ok = abs(a - b) <= tol
                bad += not ok
                line_out.append(f"{k} {a:.1f} vs {b:.1f}{'' if ok else ' MISMATCH'}")
            rows.append(" ".join(line_out))
    print("\n".join(rows))
    print(f"{len(rows)} readings compared, {bad} mismatches")
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
