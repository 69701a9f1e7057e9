"""Cost of redaction (:class:`utils.redaction.Redactor`: every spelling of a secret, one expression).

    python -m bench.redaction [--repeat 3]

1. The Kubernetes corpus's text (``../shared/datasets/kubernetes/docs``; skipped when absent) with one
   API-key-sized secret that it does not hold: cut into 2,000-character pieces (as the results file
   redacts chunk texts one value at a time), and as one text.
2. Hostile texts of 1, 2 and 4 million characters built to make a spaced or case-insensitive
   search work hard (the secret's first letter then whitespace, repeated; the first letters of the
   secret in changing case): time must double when the size doubles (linear, no backtracking).
3. The same texts holding the secret in every spelling (so the rewrite runs, not only the check).

Best of ``--repeat`` wall times.
"""

from __future__ import annotations

import argparse
import base64
import time
from pathlib import Path

from utils.redaction import Redactor

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT.parent / "shared" / "datasets" / "kubernetes" / "docs"
SECRET = "sk-ant-api03-" + "x" * 90


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


HOSTILE = {
    "first letter + spaces": lambda n: ("s" + " " * 9) * (n // 10),
    "first letters, mixed case": lambda n: ("sK-AnT-" * (n // 7)),
    "spaced prefix, broken": lambda n: (" ".join("sk-ant-api") + "!") * (n // 20),
}


def spellings(secret: str) -> str:
    return " | ".join([secret.upper(), " ".join(secret), base64.b64encode(secret.encode()).decode(),
                       base64.b64encode(b"ab" + secret.encode()).decode()])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    redact = Redactor([SECRET])
    if K8S.is_dir():
        texts = [f.read_text(encoding="utf-8", errors="replace") for f in sorted(K8S.rglob("*.md"))]
        pieces = [t[i:i + 2000] for t in texts for i in range(0, len(t), 2000)]
        whole = "".join(texts)
        mb = len(whole) / 1e6
        print(f"kubernetes corpus, {len(pieces):,} pieces of 2,000 chars ({mb:.1f} MB): "
              f"{best_of(args.repeat, lambda: [redact(x) for x in pieces]):.3f} s")
        print(f"kubernetes corpus, one text ({mb:.1f} MB): {best_of(args.repeat, lambda: redact(whole)):.3f} s")
        with_secret = whole + spellings(SECRET)
        print(f"kubernetes corpus + every spelling of the secret: "
              f"{best_of(args.repeat, lambda: redact(with_secret)):.3f} s")
    else:
        print(f"{K8S} is absent: corpus rows skipped")
    for name, build in HOSTILE.items():
        texts = [build(n) for n in (1_000_000, 2_000_000, 4_000_000)]  # built before the timing
        times = [best_of(args.repeat, lambda text=text: redact(text)) for text in texts]
        ratios = " / ".join(f"{b / a:.1f}" for a, b in zip(times, times[1:], strict=False))
        print(f"{name:<28} 1M {times[0] * 1000:6.1f} ms  2M {times[1] * 1000:6.1f} ms  4M {times[2] * 1000:6.1f} ms"
              f"  (ratios {ratios})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
