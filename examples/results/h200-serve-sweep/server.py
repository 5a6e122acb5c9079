# A stand-in for a model server: loads torch, holds a weight matrix and a
# 20 GB "KV cache" on the GPU, and answers /gemm?m=M with the time of an
# [M, n] x [n, n] GEMM (CUDA events, 100 runs after 10 warm-ups).
import argparse, json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

p = argparse.ArgumentParser()
p.add_argument("--dtype"); p.add_argument("--n", type=int); p.add_argument("--port", type=int); p.add_argument("--starts")
a = p.parse_args()
with open(a.starts, "a") as f:
    f.write(f"{a.dtype} {a.n} pid {os.getpid()}\n")
print("loading torch", flush=True)
import torch
dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
W = torch.randn(a.n, a.n, device="cuda", dtype=dt)
kv = torch.empty(int(20e9), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("weights loaded", flush=True)

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = b"ok"
        elif self.path.startswith("/gemm?m="):
            m = int(self.path.split("=")[1])
            x = torch.randn(m, a.n, device="cuda", dtype=dt)
            for _ in range(10):
                y = x @ W
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(100):
                y = x @ W
            e.record()
            torch.cuda.synchronize()
            us = s.elapsed_time(e) * 1000 / 100
            body = json.dumps({"time_us": round(us, 2), "tflops": round(2 * m * a.n * a.n / us / 1e6, 2)}).encode()
        else:
            self.send_response(404); self.end_headers(); return
        self.send_response(200); self.end_headers(); self.wfile.write(body)

    def log_message(self, *args):
        pass

signal.signal(signal.SIGINT, lambda *_: sys.exit(0))  # stopped as vLLM is: quietly
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
srv = HTTPServer(("127.0.0.1", a.port), H)
print("Application startup complete", flush=True)
srv.serve_forever()
