#!/usr/bin/env python3
"""Holds each serving row's achieved concurrency against the server's.

load-check.py DIR: DIR holds proven.json (the record) and .greenlight/proven
(the state dir: journal.jsonl, metrics/serve.jsonl, the scrapes kept).
For each row of the decode phase, independently of greenlight's own
figures: the client's window (its file's start_epoch, first start to last
end), else the step's span from the journal (its step-start and step-end),
the server's running and waiting requests over that span from the kept
scrapes (their time-weighted mean and peak), beside the row's requested
and achieved concurrency and its stamp.
"""
import json
import sys
from datetime import datetime

d = sys.argv[1]
rec = json.load(open(f"{d}/proven.json"))


def ts(s):
    s = s.replace("Z", "+00:00")
    if "." in s:  # Go writes nanoseconds; Python takes microseconds
        head, frac = s.split(".", 1)
        digits = "".join(c for c in frac if c.isdigit())
        s = head + "." + digits[:6] + frac[len(digits):]
    return datetime.fromisoformat(s).timestamp()


spans = {}
for line in open(f"{d}/.greenlight/proven/journal.jsonl"):
    r = json.loads(line)
    if r.get("phase") != "decode" or r["kind"] not in ("step-start", "step-end"):
        continue
    spans.setdefault(r.get("step", 0), {})[r["kind"]] = ts(r["t"])
scrapes = []
for line in open(f"{d}/.greenlight/proven/metrics/serve.jsonl"):
    s = json.loads(line)
    if s.get("v"):
        scrapes.append((ts(s["t"]), s["v"]))
print("row  requested  achieved  decode-only  server running mean/peak  waiting mean/peak  scrapes  achieved/requested  decode-only vs running  stamp")
for row in rec["rows"]:
    if row["phase"] != "decode":
        continue
    v = row["values"]
    sp = spans.get(row["step"] - 1, {})
    a, b = sp.get("step-start"), sp.get("step-end")
    # The client's measured window where its file says when it began (its
    # first request's start to its last request's end), else the step's.
    try:
        bench = json.load(open(f"{d}/bench/{row['point'].replace('=', '')}.json"))
        e0 = bench["start_epoch"]
        ends = [s + t0 + sum(g) for s, t0, g in zip(bench["start_times"], bench["ttfts"], bench["itls"])]
        a, b = e0 + min(bench["start_times"]), e0 + max(ends)
    except (OSError, KeyError, ValueError):
        pass
    win = [(t, x) for t, x in scrapes if a is not None and b is not None and a <= t <= b]
    # time-weighted: each scrape holds until the next
    tot = run = wait = 0.0
    for i, (t, x) in enumerate(win[:-1]):
        dt = win[i + 1][0] - t
        tot += dt
        run += dt * x.get("running", 0)
        wait += dt * x.get("waiting", 0)
    rm, wm = (run / tot, wait / tot) if tot else (float("nan"), float("nan"))
    rp = max((x.get("running", 0) for _, x in win), default=float("nan"))
    wp = max((x.get("waiting", 0) for _, x in win), default=float("nan"))
    req, ach, dec = v.get("max_concurrency"), v.get("achieved_concurrency"), v.get("achieved_decode_concurrency")
    # The client counts a request from its send to its last token; the
    # server from its admission to its last step: the decode-only count
    # (first token to last) is the one to hold its running gauge against.
    gap = f"{100 * (dec - rm) / rm:+.1f}%" if dec and rm == rm and rm > 0 else "?"
    share = f"{100 * ach / req:.1f}%" if ach and req else "?"
    stamp = "; ".join(row.get("stamp") or []) or "-"
    print(f"{row['point']:4s} {req!s:>9} {ach or 0:9.2f} {dec or 0:12.2f} {rm:12.2f} / {rp:<6g} {wm:10.2f} / {wp:<6g} {len(win):7d}  {share:>18}  {gap:>22}  {stamp}")
