"""Tests of the example scripts that need no GPU: python3 -m unittest test_scripts"""
import io
import json
import os
import tempfile
import unittest

import decode_load
import gemm_bench
import profile_small


class GemmBench(unittest.TestCase):
    def test_builtin_shapes_tp8(self):
        sh = dict((n, (N, K)) for n, N, K in gemm_bench.shapes(gemm_bench.KIMI_K25, 8))
        self.assertEqual(sh["expert_gate_up"], (512, 7168))
        self.assertEqual(sh["expert_down"], (7168, 256))
        self.assertEqual(sh["q_b_proj"], (64 * 192 // 8, 1536))
        self.assertEqual(sh["lm_head"], (163840 // 8, 7168))

    def test_tp_must_divide(self):
        with self.assertRaises(ValueError):
            gemm_bench.shapes(gemm_bench.KIMI_K25, 3)

    def test_config_nested_text_config(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"text_config": {"hidden_size": 4096, "moe_intermediate_size": 1024}}, f)
        cfg = gemm_bench.load_config(f.name)
        os.unlink(f.name)
        self.assertEqual(cfg["hidden_size"], 4096)
        self.assertEqual(cfg["moe_intermediate_size"], 1024)
        self.assertEqual(cfg["vocab_size"], gemm_bench.KIMI_K25["vocab_size"])

    def test_parse_ms(self):
        self.assertEqual(gemm_bench.parse_ms("1, 8,64"), [1, 8, 64])
        with self.assertRaises(Exception):
            gemm_bench.parse_ms("0")

    def test_row_json_line(self):
        row = gemm_bench.row_for("expert_down", 128, 7168, 256, "bf16", 10e-6, 2)
        self.assertAlmostEqual(row["TFLOP/s"], 2 * 128 * 7168 * 256 / 10e-6 / 1e12, places=1)
        out = io.StringIO()
        line = gemm_bench.record(row, out)
        self.assertEqual(json.loads(line)["shape"], "expert_down")
        self.assertEqual(list(json.loads(out.getvalue())), ["shape", "M", "N", "K", "dtype", "time_us", "TFLOP/s", "GB/s"])

    def test_dry_run_needs_no_torch(self):
        self.assertEqual(gemm_bench.main(["--dry-run", "--tp", "8"]), 0)


class DecodeLoad(unittest.TestCase):
    def test_summary(self):
        row = decode_load.summarize([(0.1, 1.1, 11), (0.2, 2.2, 21), None], 2.5)
        self.assertEqual(row["requests"], 2)
        self.assertEqual(row["failed"], 1)
        self.assertEqual(row["output_tok_s"], round(32 / 2.5, 2))
        self.assertAlmostEqual(row["mean_tpot_ms"], 100.0, places=1)
        out = io.StringIO()
        decode_load.print_summary(row, out)
        self.assertIn("Output token throughput (tok/s):         12.80", out.getvalue())


class ProfileSmall(unittest.TestCase):
    def test_kernel_table(self):
        md = profile_small.kernel_table([("a|b", 2, 3000.0), ("c", 1, 1000.0)], 5)
        self.assertIn("| `a\\|b` | 2 | 3.000 | 75.0 % |", md)
        self.assertTrue(md.startswith("| kernel |"))


if __name__ == "__main__":
    unittest.main()
