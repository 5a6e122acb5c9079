#!/usr/bin/env python3
"""A continuous-batching decode server on one GPU, to prove a load against.

Not a model: each decode step is real GPU work (a stack of bf16 matmuls
over the running requests' activations, so a step's time is a weight
read, as a real decode step's is), and the scheduler is vLLM's in
miniature: at most --max-num-seqs requests run, the rest wait in a queue
in arrival order, each step admits waiting requests into free slots,
every running request gets one token a step, and a request leaves when it
has its max_tokens. Past --max-waiting requests waiting, a new one is
rejected (HTTP 503).

  POST /v1/completions  {"prompt": ..., "max_tokens": N, "stream": true}:
                        server-sent events, one a token, then [DONE]
  GET  /metrics         vLLM's names and meanings: vllm:num_requests_running,
                        vllm:num_requests_waiting, vllm:kv_cache_usage_perc,
                        vllm:num_preemptions_total, vllm:request_success_total,
                        vllm:generation_tokens_total, vllm:prompt_tokens_total,
                        vllm:admission_rejections_total
  GET  /health          200 once the weights are on the GPU

  python3 cb_server.py --port 8000 --max-num-seqs 16 --step-ms 10
"""
import argparse
import collections
import json
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Request:
    def __init__(self, prompt_tokens, max_tokens):
        self.prompt_tokens, self.max_tokens, self.produced = prompt_tokens, max_tokens, 0
        self.tokens = queue.Queue()  # one item a token; None when done


class Engine:
    def __init__(self, args):
        import torch

        self.torch = torch
        self.max_seqs, self.max_waiting = args.max_num_seqs, args.max_waiting
        self.kv_capacity = args.kv_tokens
        self.lock = threading.Condition()
        self.waiting, self.running = collections.deque(), []
        self.counters = collections.Counter()
        h = args.hidden
        # Layers whose weights one step reads: sized so a step takes about
        # --step-ms at this GPU's bandwidth (measured once, here).
        w = torch.randn(h, h, device="cuda", dtype=torch.bfloat16) * 0.01
        x = torch.randn(args.max_num_seqs, h, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            x @ w
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(20):
            x @ w
        torch.cuda.synchronize()
        per = (time.perf_counter() - t) / 20
        n = max(1, int(args.step_ms / 1000 / per))
        self.weights = [torch.randn(h, h, device="cuda", dtype=torch.bfloat16) * 0.01 for _ in range(n)]
        self.x = torch.randn(args.max_num_seqs, h, device="cuda", dtype=torch.bfloat16)
        print(f"{n} layers of {h}x{h} a step; {args.max_num_seqs} slots; ready", flush=True)

    def submit(self, r):
        with self.lock:
            if len(self.waiting) >= self.max_waiting:
                self.counters["rejected"] += 1
                return False
            self.waiting.append(r)
            self.counters["prompt"] += r.prompt_tokens
            self.lock.notify()
            return True

    def kv_used(self):
        return sum(r.prompt_tokens + r.produced for r in self.running) / self.kv_capacity

    def loop(self):
        while True:
            with self.lock:
                while len(self.running) < self.max_seqs and self.waiting:
                    self.running.append(self.waiting.popleft())
                while not self.running:
                    self.lock.wait()
                    while len(self.running) < self.max_seqs and self.waiting:
                        self.running.append(self.waiting.popleft())
                batch = list(self.running)
            y = self.x[: len(batch)]
            for w in self.weights:
                y = y @ w
            self.torch.cuda.synchronize()
            with self.lock:
                for r in batch:
                    r.produced += 1
                    self.counters["generated"] += 1
                    r.tokens.put(r.produced)
                    if r.produced >= r.max_tokens:
                        r.tokens.put(None)
                        self.running.remove(r)
                        self.counters["success"] += 1

    def metrics(self):
        with self.lock:
            c = self.counters
            lines = [
                ("vllm:num_requests_running", "gauge", len(self.running)),
                ("vllm:num_requests_waiting", "gauge", len(self.waiting)),
                ("vllm:kv_cache_usage_perc", "gauge", self.kv_used()),
                ("vllm:num_preemptions_total", "counter", 0),
                ("vllm:request_success_total", "counter", c["success"]),
                ("vllm:generation_tokens_total", "counter", c["generated"]),
                ("vllm:prompt_tokens_total", "counter", c["prompt"]),
                ("vllm:admission_rejections_total", "counter", c["rejected"]),
            ]
        out = []
        for name, kind, v in lines:
            out.append(f"# TYPE {name.removesuffix('_total')} {kind}\n{name}{{engine=\"0\"}} {float(v)}\n")
        return "".join(out)


def handler(engine):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path.startswith("/metrics"):
                body = engine.metrics().encode()
            elif self.path.startswith("/health"):
                body = b"ok\n"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            if not self.path.startswith("/v1/completions"):
                self.send_error(404)
                return
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            r = Request(len(str(req.get("prompt", "")).split()), int(req.get("max_tokens", 16)))
            if not engine.submit(r):
                self.send_error(503, "the waiting queue is full")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            while True:
                t = r.tokens.get()
                if t is None:
                    break
                self.wfile.write(b'data: {"choices": [{"text": " t"}]}\n\n')
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return H


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-num-seqs", type=int, default=16)
    ap.add_argument("--max-waiting", type=int, default=1000)
    ap.add_argument("--kv-tokens", type=int, default=1 << 20, help="the KV cache's capacity, tokens")
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--step-ms", type=float, default=10)
    args = ap.parse_args()
    engine = Engine(args)
    threading.Thread(target=engine.loop, daemon=True).start()
    ThreadingHTTPServer.request_queue_size = 1024  # a burst of clients connecting is queued, not reset
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), handler(engine))
    srv.daemon_threads = True
    print(f"serving on {args.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
