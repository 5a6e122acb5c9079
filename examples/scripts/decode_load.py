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
    args = p.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        p.error("--requests and --concurrency must be at least 1")
    prompt = " ".join(["profile"] * args.prompt_words)
    results = [None] * args.requests
    starts, itls, errors = [0.0] * args.requests, [[] for _ in range(args.requests)], [""] * args.requests
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
    elif os.environ.get("GREENLIGHT_RESULTS"):
        with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
            f.write(json.dumps(row) + "\n")
    return 0 if row["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
