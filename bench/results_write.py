"""Cost of writing the results file: strict JSON with redaction on values, then the atomic write.

    python -m bench.results_write [--rows 1000] [--repeat 3]

A synthetic run of ``--rows`` questions, each with five retrieved chunks of 2,000 characters (the
size of a Kubernetes run with chunk text kept), written by :func:`utils.files.output.write_json_atomic`
with no secret and with one API-key-sized secret; best of ``--repeat`` wall times, beside a bare
``json.dumps(indent=2)`` of the same payload (what the write cost before redaction moved onto the
values), and the peak memory the write adds (tracemalloc).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from utils.files.output import write_json_atomic

SECRET = "sk-ant-api03-" + "x" * 90


def payload(rows: int) -> dict:
    row = {"question": "How do I configure x? " * 4,
           "llm_raw_reply": json.dumps({"grade": 7, "reasoning": "r" * 400}),
           "retrieved": [{"rank": i, "doc_id": "d", "chunk_id": f"c{i}", "score": 1.5, "text": "t" * 2000,
                          "heading_path": ["a", "b"]} for i in range(1, 6)],
           "total_score": 6.5, "category": "x"}
    return {"run": {"status": "completed"}, "results": [dict(row, question_id=f"q{i}") for i in range(rows)]}


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    data = payload(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "r.json"
        lines = []
        for label, secrets in (("no secret", ()), ("one secret", (SECRET,))):
            seconds = best_of(args.repeat, lambda s=secrets: write_json_atomic(out, data, s))
            tracemalloc.start()
            write_json_atomic(out, data, secrets)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            lines.append(f"write_json_atomic, {label:<10} {out.stat().st_size / 1e6:6.1f} MB  {seconds:6.2f} s  "
                         f"peak +{peak / 1e6:.1f} MB")
        dumps = best_of(args.repeat, lambda: json.dumps(data, indent=2, ensure_ascii=False, default=str))
        lines.append(f"json.dumps only (no file)           {dumps:6.2f} s")
    sys.stdout.write(f"{args.rows} rows\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
