#!/usr/bin/env python3
"""Capture small real torch.profiler traces on a GPU, the way vLLM does it:
one gzipped Chrome trace per rank (tensorboard_trace_handler, use_gzip=True)
and the key_averages table beside it (profiler_out_{rank}.txt).

The model is a tiny Mixtral (MoE) built from a transformers config with
random weights; a few decode steps run under the profiler with CUDA
activities. Usage: capture-trace.py OUTDIR [RANKS] [STEPS]
"""
import os, sys, time
import torch
from transformers import MixtralConfig, MixtralForCausalLM

out = sys.argv[1]
ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 6
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
cfg = MixtralConfig(vocab_size=4096, hidden_size=512, intermediate_size=1024,
                    num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
                    num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=1024)
model = MixtralForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
from torch.profiler import profile, ProfilerActivity, tensorboard_trace_handler
for rank in range(ranks):
    ids = torch.randint(0, 4096, (4, 64), device="cuda")
    with torch.no_grad():
        out_ = model(ids, use_cache=True)  # prefill outside the trace (warm-up)
        past = out_.past_key_values
        nxt = out_.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        handler = tensorboard_trace_handler(out, worker_name=f"rank{rank}", use_gzip=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], on_trace_ready=handler) as prof:
            for _ in range(steps + rank):  # rank 1 does a step more: a real spread
                o = model(nxt, past_key_values=past, use_cache=True)
                past = o.past_key_values
                nxt = o.logits[:, -1:].argmax(-1)
            torch.cuda.synchronize()
    with open(os.path.join(out, f"profiler_out_{rank}.txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=30))
    time.sleep(1.1)  # distinct file names (the handler puts a ms timestamp in them)
print("torch", torch.__version__)
for n in sorted(os.listdir(out)):
    print(n, os.path.getsize(os.path.join(out, n)))
