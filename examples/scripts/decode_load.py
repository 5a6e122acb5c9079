#!/usr/bin/env python3
"""Decode load for an OpenAI-compatible endpoint (vLLM), standard library only.

Sends --requests completions, --concurrency at a time, streaming, and
measures what a decode profile needs: output token throughput, time to first
token and time per output token. Prints a summary in the format of vLLM's
benchmark_serving (so greenlight's results regex reads it) and appends one
JSON line to $GREENLIGHT_RESULTS when set.

  python3 decode_load.py --base http://localhost:8000 --model moonshotai/Kimi-K2.5 \\
      --requests 64 --concurrency 16 --max-tokens 256
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[i]


def one_request(base, model, prompt, max_tokens, timeout, gaps=None):
    """Stream one completion; returns (ttft_s, total_s, output_tokens).
    gaps, when a list, gets the time between each token and the next, s."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True}).encode()
    req = urllib.request.Request(base.rstrip("/") + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft, chunks, last = None, 0, None
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            now = time.perf_counter()
            if ttft is None:
                ttft = now - start
            elif gaps is not None:
                gaps.append(now - last)
            last = now
            chunks += 1
    total = time.perf_counter() - start
    return (ttft if ttft is not None else total), total, chunks


def summarize(results, wall):
    """Aggregate per-request (ttft, total, tokens) into the summary row."""
    ok = [r for r in results if r is not None]
    tokens = sum(r[2] for r in ok)
    tpots = [(r[1] - r[0]) / (r[2] - 1) * 1e3 for r in ok if r[2] > 1]
    return {
        "requests": len(ok),
        "failed": len(results) - len(ok),
        "duration_s": round(wall, 2),
        "output_tok_s": round(tokens / wall, 2) if wall > 0 else 0.0,
        "mean_ttft_ms": round(statistics.mean(r[0] for r in ok) * 1e3, 2) if ok else None,
        "mean_tpot_ms": round(statistics.mean(tpots), 2) if tpots else None,
        "p99_tpot_ms": round(percentile(tpots, 99), 2) if tpots else None,
    }


def print_summary(row, out=sys.stdout):
    out.write("============ Serving Benchmark Result ============\n")
    out.write(f"{'Successful requests:':<40} {row['requests']}\n")
    out.write(f"{'Failed requests:':<40} {row['failed']}\n")
    out.write(f"{'Benchmark duration (s):':<40} {row['duration_s']:.2f}\n")
    out.write(f"{'Output token throughput (tok/s):':<40} {row['output_tok_s']:.2f}\n")
    for key, label in (("mean_ttft_ms", "Mean TTFT (ms):"), ("mean_tpot_ms", "Mean TPOT (ms):"), ("p99_tpot_ms", "P99 TPOT (ms):")):
        if row[key] is not None:
            out.write(f"{label:<40} {row[key]:.2f}\n")
    out.write("==================================================\n")
    out.flush()


def write_aiperf(args, results, starts, ends, itls, errors, wall, epoch):
    """The requests as AIPerf documents its exports: a JSON line a request
    (metadata's request_start_ns and request_end_ns; metrics in ms; error)
    and the summary's metrics (unit and statistics) and loadgen config."""
    os.makedirs(args.aiperf_dir, exist_ok=True)
    ok = [r for r in results if r is not None]
    with open(os.path.join(args.aiperf_dir, "profile_export.jsonl"), "w") as f:
        for i, r in enumerate(results):
            meta = {"session_num": i, "request_start_ns": int(epoch(starts[i]) * 1e9),
                    "request_end_ns": int(epoch(ends[i]) * 1e9), "benchmark_phase": "profiling", "was_cancelled": False}
            if r is None:
                rec = {"metadata": meta, "metrics": {}, "error": {"code": 503, "type": "HTTPError", "message": errors[i]}}
            else:
                m = {"time_to_first_token": {"value": r[0] * 1e3, "unit": "ms"},
                     "request_latency": {"value": r[1] * 1e3, "unit": "ms"},
                     "inter_chunk_latency": {"value": [g * 1e3 for g in itls[i]], "unit": "ms"},
                     "output_sequence_length": {"value": r[2], "unit": "tokens"}}
                if r[2] > 1:
                    m["inter_token_latency"] = {"value": (r[1] - r[0]) / (r[2] - 1) * 1e3, "unit": "ms"}
                rec = {"metadata": meta, "metrics": m, "error": None}
            f.write(json.dumps(rec) + "\n")

    def dist(xs, unit):
        if not xs:
            return {"unit": unit}
        return {"unit": unit, "avg": statistics.mean(xs), "p50": percentile(xs, 50), "p99": percentile(xs, 99),
                "min": min(xs), "max": max(xs), "std": statistics.pstdev(xs)}
    summary = {
        "request_throughput": {"unit": "requests/sec", "avg": len(ok) / wall},
        "output_token_throughput": {"unit": "tokens/sec", "avg": sum(r[2] for r in ok) / wall},
        "time_to_first_token": dist([r[0] * 1e3 for r in ok], "ms"),
        "inter_token_latency": dist([(r[1] - r[0]) / (r[2] - 1) * 1e3 for r in ok if r[2] > 1], "ms"),
        "request_latency": dist([r[1] * 1e3 for r in ok], "ms"),
        "request_count": {"unit": "requests", "avg": len(ok)},
        "benchmark_duration": {"unit": "sec", "avg": wall},
        "was_cancelled": False,
        "input_config": {"loadgen": {"concurrency": args.concurrency, "request_count": args.requests}},
    }
    with open(os.path.join(args.aiperf_dir, "profile_export_aiperf.json"), "w") as f:
        json.dump(summary, f, indent=2)


def write_guidellm(args, results, starts, ends, errors, wall, epoch):
    """The requests as GuideLLM documents benchmarks.json: one concurrent
    benchmark, its requests by status with their timings (info.timings),
    its metrics' distributions and the requests it made."""
    def req(i, r):
        t = {"targeted_start": epoch(starts[i]), "request_start": epoch(starts[i]), "request_end": epoch(ends[i])}
        out = {"request_id": str(i), "info": {"timings": t}}
        if r is not None:
            t["first_token_iteration"] = epoch(starts[i] + r[0])
            t["last_token_iteration"] = epoch(starts[i] + r[1])
            t["token_iterations"] = r[2]
            out["output_tokens"] = r[2]
            if r[2] > 1:
                out["inter_token_latency_ms"] = (r[1] - r[0]) / (r[2] - 1) * 1e3
        else:
            out["info"]["error"] = errors[i]
        return out
    ok = [(i, r) for i, r in enumerate(results) if r is not None]
    bad = [i for i, r in enumerate(results) if r is None]

    def dist(xs):
        if not xs:
            return {"successful": None}
        return {"successful": {"mean": statistics.mean(xs), "median": statistics.median(xs), "count": len(xs),
                               "percentiles": {"p50": percentile(xs, 50), "p99": percentile(xs, 99)}}}
    bm = {
        "type_": "generative_benchmark",
        "config": {"strategy": {"type_": "concurrent", "streams": args.concurrency}},
        "scheduler_metrics": {"requests_made": {"successful": len(ok), "errored": len(bad), "incomplete": 0, "total": len(results)}},
        "metrics": {
            "requests_per_second": dist([len(ok) / wall]),
            "output_tokens_per_second": dist([sum(r[2] for _, r in ok) / wall]),
            "time_to_first_token_ms": dist([r[0] * 1e3 for _, r in ok]),
            "inter_token_latency_ms": dist([(r[1] - r[0]) / (r[2] - 1) * 1e3 for _, r in ok if r[2] > 1]),
            "request_latency": dist([r[1] for _, r in ok]),
        },
        "requests": {"successful": [req(i, r) for i, r in ok], "errored": [req(i, None) for i in bad], "incomplete": []},
    }
    with open(args.guidellm_file, "w") as f:
        json.dump({"benchmarks": [bm]}, f)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="http://localhost:8000")
    p.add_argument("--model", required=True)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--prompt-words", type=int, default=512)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--save-result", default="",
                   help="write vllm bench's --save-result --save-detailed JSON here (each request's start, TTFT, gaps, error) instead of a results line")
    p.add_argument("--aiperf-dir", default="",
                   help="also write the same requests as AIPerf's documented export: DIR/profile_export.jsonl and DIR/profile_export_aiperf.json")
    p.add_argument("--tolerate-errors", action="store_true",
                   help="exit 0 while any request succeeded (a server that turns some away at admission is measured, not a failed step)")
    p.add_argument("--guidellm-file", default="",
                   help="also write the same requests as GuideLLM's documented benchmarks.json (one concurrent benchmark)")
    args = p.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        p.error("--requests and --concurrency must be at least 1")
    prompt = " ".join(["profile"] * args.prompt_words)
    results = [None] * args.requests
    starts, ends = [0.0] * args.requests, [0.0] * args.requests
    itls, errors = [[] for _ in range(args.requests)], [""] * args.requests
    next_i, lock, done = [0], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= args.requests:
                return
            starts[i] = time.perf_counter()
            try:
                results[i] = one_request(args.base, args.model, prompt, args.max_tokens, args.timeout, itls[i])
            except (urllib.error.URLError, OSError, ValueError) as e:
                errors[i] = str(e)
                print(f"request {i} failed: {e}", file=sys.stderr)
            ends[i] = time.perf_counter()
            with lock:
                done[0] += 1
                print(f"\r{100 * done[0] // args.requests:3d}%| {done[0]}/{args.requests} [requests]", end="", file=sys.stderr, flush=True)

    start, start_epoch = time.perf_counter(), time.time()
    threads = [threading.Thread(target=worker) for _ in range(min(args.concurrency, args.requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(file=sys.stderr)
    wall = time.perf_counter() - start
    row = summarize(results, wall)
    print_summary(row)
    if args.save_result:
        ok = [r for r in results if r is not None]
        detailed = {
            "backend": "openai", "model_id": args.model, "max_concurrency": args.concurrency,
            "num_prompts": args.requests, "completed": len(ok), "failed": row["failed"], "duration": wall,
            "request_throughput": len(ok) / wall, "output_throughput": row["output_tok_s"],
            "mean_ttft_ms": row["mean_ttft_ms"], "mean_tpot_ms": row["mean_tpot_ms"], "p99_tpot_ms": row["p99_tpot_ms"],
            "mean_e2el_ms": statistics.mean(r[1] for r in ok) * 1e3 if ok else None,
            # Each request, as vllm bench --save-detailed writes it: its
            # start (on one clock), TTFT, the gaps between its tokens.
            "start_times": [s - start for s in starts],
            "start_epoch": start_epoch,  # when start_times' zero was, on the wall clock (not vllm bench's)
            "ttfts": [r[0] if r else 0.0 for r in results],
            "itls": [g if results[i] else [] for i, g in enumerate(itls)],
            "output_lens": [r[2] if r else 0 for r in results],
            "errors": errors,
        }
        with open(args.save_result, "w") as f:
            json.dump(detailed, f)
    epoch = lambda t: start_epoch + (t - start)  # a perf_counter time on the wall clock
    if args.aiperf_dir:
        write_aiperf(args, results, starts, ends, itls, errors, wall, epoch)
    if args.guidellm_file:
        write_guidellm(args, results, starts, ends, errors, wall, epoch)
    if not args.save_result and os.environ.get("GREENLIGHT_RESULTS"):
        with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
            f.write(json.dumps(row) + "\n")
    if args.tolerate_errors:
        return 0 if row["requests"] > 0 else 1
    return 0 if row["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
