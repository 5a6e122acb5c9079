#!/usr/bin/env python3
"""An independent aggregation of torch.profiler Chrome traces, to check
greenlight's summaries against (trace/testdata/reference.json):
per file, GPU kernel count and time, memcpy/memset time, the top kernels,
time per category (the same rules as trace/rules.go, first match
wins, case-insensitive), the traced window and the busy time (the union of
all GPU activity). Usage: trace-reference.py TRACE... > reference.json
"""
import gzip, json, re, sys

RULES = [
    ("communication", r"nccl|all_?reduce|allgather|all_gather|reduce_?scatter|all_?to_?all|cross_device_reduce|custom_?ar|one_?shot|two_?shot|multimem"),
    ("MoE", r"moe|topk|top_k|expert|grouped_?(gemm|mm)|groupproblemshape|ptrarray|router|gating|permute|align_block_size"),
    ("attention", r"flash|fmha|sdpa|attention|attn|paged|flashinfer|xformers|mla|softmax"),
    ("GEMM", r"gemm|gemv|nvjet|cutlass|cublas|xmma|marlin|machete|matmul|wgmma|_mma|s16816|h16816|splitk|sm\d+_.*(tn|nt|nn|tt)"),
    ("memory", r"memcpy|memset"),
    ("gather/scatter/index", r"gather|scatter|index"),
    ("elementwise/cast", r"elementwise|copy|cast|convert|fill|vectorized|unrolled|act_and_mul|silu|gelu|norm|rotary|rope|catarray|arange|reduce|sort|where|neg|mul|add"),
]
RULES = [(n, re.compile(p, re.I)) for n, p in RULES]

def category(name):
    for n, r in RULES:
        if r.search(name):
            return n
    return "other"

out = {}
for path in sys.argv[1:]:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kern, mem, ivs = {}, {}, []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", ""))
        if cat.lower() == "kernel":
            d = kern
        elif cat in ("gpu_memcpy", "gpu_memset"):
            d = mem
        else:
            continue
        c = d.setdefault(e["name"], [0, 0.0])
        c[0] += 1
        c[1] += e["dur"]
        ivs.append((e["ts"], e["ts"] + e["dur"]))
    cats = {}
    for name, (n, t) in kern.items():
        c = cats.setdefault(category(name), [0, 0.0]); c[0] += n; c[1] += t
    for name, (n, t) in mem.items():
        c = cats.setdefault("memory", [0, 0.0]); c[0] += n; c[1] += t
    ivs.sort()
    busy, (cs, ce) = 0.0, ivs[0]
    for s, e in ivs[1:]:
        if s > ce:
            busy += ce - cs; cs, ce = s, e
        else:
            ce = max(ce, e)
    busy += ce - cs
    top = sorted(kern.items(), key=lambda kv: (-kv[1][1], kv[0]))[:10]
    out[path.split("/")[-1]] = {
        "kernels": sum(n for n, _ in kern.values()),
        "kernel_us": sum(t for _, t in kern.values()),
        "memory_us": sum(t for _, t in mem.values()),
        "window_us": max(e for _, e in ivs) - ivs[0][0],
        "busy_us": busy,
        "top": [{"name": k, "count": v[0], "total_us": v[1]} for k, v in top],
        "cats": {k: {"count": v[0], "total_us": v[1]} for k, v in cats.items()},
    }
json.dump(out, sys.stdout, indent=1)
