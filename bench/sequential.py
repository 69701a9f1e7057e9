"""Judging until the verdict is known: the group-sequential design by simulation.

    nice -n 10 python -m bench.sequential [--reps 2000] [--questions 400] [--seed 20251201]
                                          [--flips 4000] [--cs-reps 200] [--json OUT]

Every cell: ``--reps`` seeded repetitions of ``--questions`` paired questions judged in 10 equal
blocks (a look after each), the design of ``components.stats.sequential`` (Lan-DeMets
O'Brien-Fleming-type α spending, α = 0.05 split across the gated metrics, repeated intervals from
Student's t and Hall's skewness-corrected t). Judging stops when every gated metric is decided.

1. **Remedies** for skewed, discrete differences, gating the mean grade: the share of runs declaring
   a difference that is not there (normal; skewed −3/0/+1 with p .1/.6/.3; strongly skewed −5/0/+1
   with p .05/.7/.25; sparse symmetric −1/0/+1 with p .05/.9/.05, like a pass indicator that rarely
   changes), and the judge calls used at a true
   difference of 1.5 × the full set's minimum detectable effect (MDE, ``statistics.min_detectable_delta``
   at 80% power). Candidates: the z statistic with a plug-in SD; Student quantiles; Student with the
   first look at 3 blocks; a sign-flip test at each look against the look's nominal level (``--flips``
   random sign patterns shared by the runs); Hall's correction alone; Student and Hall together
   (the procedure).
2. **The procedure, gating the mean grade** (the "Done when" figures): (a) false positives with no true
   difference, (b) coverage of the interval where judging stopped, (c) at 1.5 × MDE the mean share of
   judge calls and the agreement of the verdict with full grading (a fixed-N paired t-test at α on
   every question). Differences at 1.5 × MDE are the same draws shifted by that amount.
3. **The default gated metrics** (mean grade, mean total score, pass rate ≥ 7; then also ≥ 8 and
   ≥ 6.5): grade pairs of two strategies on the same questions (a question's difficulty, judge noise,
   the needle's rank and its weight, totals = grade × weight, pass = total ≥ the mark), the shift of
   the new strategy set so that the mean grade moves by 1.5 × its MDE; α split across the metrics.
   Agreement with full grading at α per metric (what ``compare`` does) and at α/m.
4. **The default gate**: with no ``--fail-on`` the run gates the primary metric, the mean grade, alone
   (``components.run.adaptive.PRIMARY``). Grade pairs with a true difference of ±1.5 × the grade's MDE
   (half the runs better, half worse): the mean share of judge calls (target: at most 60%); with no
   difference, the share of runs declaring one (target: at most α + 2 SE).
5. **The confidence sequence** of ``--target-ci``: grades judged until the half-width of the mean
   grade's interval is at most 0.4, ``--cs-reps`` runs (each interval is computed afresh after
   every block, which is slow).

Prints the tables and the command; ``--json OUT`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from components.stats import sequential as Q
from components.stats.statistics import min_detectable_delta
from utils.metrics import NOT_FOUND_WEIGHT, RANK_WEIGHTS

SEED = 20251201
ALPHA = Q.ALPHA
BLOCKS = 10
SKEWED = ([-3.0, 0.0, 1.0], [0.1, 0.6, 0.3])  # mean 0, variance 1.2, skewness −1.83
MIRRORED = ([3.0, 0.0, -1.0], [0.1, 0.6, 0.3])
STRONG = ([-5.0, 0.0, 1.0], [0.05, 0.7, 0.25])  # mean 0, variance 1.5, skewness −3.3
SPARSE = ([-1.0, 0.0, 1.0], [0.05, 0.9, 0.05])
RANK_P = {1: 0.55, 2: 0.10, 3: 0.07, 4: 0.05, 5: 0.05, None: 0.18}  # the needle's rank (None: not retrieved)
SAME_RANK = 0.75  # chance the new strategy ranks the needle where the baseline did
PASS_MARKS = (7.0, 8.0, 6.5)
TARGET_W = 0.4

Interval = Callable[[Q.Moments, Q.Design, int, float], tuple[np.ndarray, np.ndarray]]


# ---- data ---------------------------------------------------------------------------------------

def discrete(rng: np.random.Generator, law: tuple[list[float], list[float]], shape: tuple[int, int]) -> np.ndarray:
    values, p = law
    return np.asarray(values)[rng.choice(len(values), p=p, size=shape)]


def mde(population: np.ndarray, n: int) -> float:
    """The MDE at 80% power of a paired test on ``n`` questions, from a large sample of differences
    (``min_detectable_delta`` is z·s/√len; rescaled to n questions)."""
    return min_detectable_delta(population) * math.sqrt(len(population) / n)


def grade_pairs(rng: np.random.Generator, shape: tuple[int, ...], shift: float) -> dict[str, np.ndarray]:
    """Per-question differences (new − baseline) of the default gated metrics, in their units, and
    the baseline's grades."""
    difficulty = rng.normal(6.6, 2.0, shape)
    ranks = np.array([0 if r is None else r for r in RANK_P])
    weights = np.array([NOT_FOUND_WEIGHT if r is None else RANK_WEIGHTS[r] for r in RANK_P])
    p = np.array(list(RANK_P.values()))
    rank_a = rng.choice(len(p), p=p, size=shape)
    rank_b = np.where(rng.random(shape) < SAME_RANK, rank_a, rng.choice(len(p), p=p, size=shape))

    def grade(rank: np.ndarray, move: float) -> np.ndarray:
        missed = ranks[rank] == 0
        return np.clip(np.round(difficulty + move - 2.0 * missed + rng.normal(0.0, 1.2, shape)), 1, 10)

    a, b = grade(rank_a, 0.0), grade(rank_b, shift)
    total_a, total_b = a * weights[rank_a], b * weights[rank_b]
    out = {"grade": b - a, "total": total_b - total_a, "baseline grade": a}
    for mark in PASS_MARKS:
        out[f"pass ≥ {mark:g}"] = 100.0 * ((total_b >= mark).astype(float) - (total_a >= mark))
    return out


SPANS = {"grade": 9.0, "total": 10.0, **{f"pass ≥ {m:g}": 100.0 for m in PASS_MARKS}}


def calibrated_shift(seed: int, n: int, size: int = 200_000) -> float:
    """The latent shift that moves the mean grade by 1.5 × its MDE on n questions (bisection, common
    random numbers)."""
    def excess(shift: float) -> float:
        d = grade_pairs(np.random.default_rng([seed, 99]), (size,), shift)["grade"]
        return float(d.mean() - 1.5 * mde(d, n))

    lo, hi = 0.0, 3.0
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    return (lo + hi) / 2.0


# ---- the procedures compared --------------------------------------------------------------------

def _se(m: Q.Moments) -> np.ndarray:
    return m.sd / np.sqrt(m.n)


def z_interval(m: Q.Moments, design: Q.Design, k: int, span: float):
    c = design.bounds[k - 1]
    return m.mean - c * _se(m), m.mean + c * _se(m)


def student_interval(m: Q.Moments, design: Q.Design, k: int, span: float):
    q = Q.critical_value(design.bounds[k - 1], m.n)
    return m.mean - q * _se(m), m.mean + q * _se(m)


def hall_interval(m: Q.Moments, design: Q.Design, k: int, span: float):
    q = Q.critical_value(design.bounds[k - 1], m.n)
    a = m.skew / np.sqrt(m.n)
    return m.mean - _se(m) * Q.hall_inverse(q, a), m.mean - _se(m) * Q.hall_inverse(-q, a)


def procedure_interval(m: Q.Moments, design: Q.Design, k: int, span: float):
    return Q.repeated_interval(m, design, k, span=span)


@dataclass
class Runs:
    """Per run (rows) and metric (columns): the verdict (+1/−1/0), the look index (0-based) where it
    was decided (or the stopping look), the interval there; per run the stopping look."""

    verdict: np.ndarray
    low: np.ndarray
    high: np.ndarray
    stop: np.ndarray
    used: np.ndarray  # share of the questions judged


def run_sequential(diffs: list[np.ndarray], spans: list[float], design: Q.Design, interval: Interval) -> Runs:
    """Looks ``first``..K of ``design`` on every run at once; a metric's verdict is its first decision."""
    reps = diffs[0].shape[0]
    metrics = len(diffs)
    verdict = np.zeros((reps, metrics), dtype=int)
    low = np.full((reps, metrics), np.nan)
    high = np.full((reps, metrics), np.nan)
    done = np.zeros((reps, metrics), dtype=bool)
    stop = np.full(reps, design.looks - 1)
    stopped = np.zeros(reps, dtype=bool)
    for k in range(1, design.looks + 1):
        n = design.counts[k - 1]
        for j, (d, span) in enumerate(zip(diffs, spans, strict=True)):
            lo, hi = interval(Q.moments(d[:, :n]), design, k, span)
            code = Q.decide(lo, hi)
            take = ~done[:, j] & ~stopped & ((code != 0) | (k == design.looks))
            verdict[take, j], low[take, j], high[take, j] = code[take], lo[take], hi[take]
            done[:, j] |= take & (code != 0)
        newly = ~stopped & done.all(axis=1)
        stop[newly] = k - 1
        stopped |= newly
    used = np.asarray(design.counts)[stop] / design.questions
    return Runs(verdict, low, high, stop, used)


def run_sign_flip(d: np.ndarray, design: Q.Design, flips: int, rng: np.random.Generator) -> Runs:
    """One gated metric; at look k, a Monte Carlo sign-flip test of the mean (``flips`` patterns shared
    by the runs) with p = (1 + #{|flipped sum| ≥ |sum|}) / (flips + 1) against the nominal level
    2(1 − Φ(c_k)). No interval."""
    reps, n_total = d.shape
    signs = 1.0 - 2.0 * rng.integers(0, 2, (flips, n_total))
    null = np.zeros((flips, reps))
    verdict = np.zeros((reps, 1), dtype=int)
    stop = np.full(reps, design.looks - 1)
    stopped = np.zeros(reps, dtype=bool)
    start = 0
    for k in range(1, design.looks + 1):
        n = design.counts[k - 1]
        null += signs[:, start:n] @ d[:, start:n].T
        start = n
        observed = d[:, :n].sum(axis=1)
        tol = 1e-9 * np.abs(d[:, :n]).sum(axis=1)
        p = (1.0 + (np.abs(null) >= np.abs(observed) - tol).sum(axis=0)) / (flips + 1.0)
        code = np.where(p <= design.nominal(k), np.sign(observed).astype(int), 0)
        newly = ~stopped & (code != 0)
        verdict[newly, 0], stop[newly] = code[newly], k - 1
        stopped |= newly
    used = np.asarray(design.counts)[stop] / design.questions
    nan = np.full((reps, 1), np.nan)
    return Runs(verdict, nan, nan, stop, used)


def full_grading(d: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Verdict of a fixed-N paired t-test on every question: +1 / −1 / 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.ttest_1samp(d, 0.0, axis=1).pvalue
    return np.where(np.nan_to_num(p, nan=1.0) < alpha, np.sign(d.mean(axis=1)).astype(int), 0)


def covered(runs: Runs, truth: np.ndarray) -> np.ndarray:
    return (runs.low <= truth) & (truth <= runs.high)


# ---- the tables ---------------------------------------------------------------------------------

def remedies(args, design: Q.Design) -> list[dict]:
    late = Q.plan(args.questions, alpha=ALPHA, counts=design.counts[2:])
    candidates = [
        ("z statistic, plug-in SD", lambda d, s: run_sequential([d], [s], design, z_interval)),
        ("Student t quantiles", lambda d, s: run_sequential([d], [s], design, student_interval)),
        ("Student t, first look at 3 blocks", lambda d, s: run_sequential([d], [s], late, student_interval)),
        (f"sign-flip test at each look ({args.flips} patterns)",
         lambda d, s: run_sign_flip(d, design, args.flips, np.random.default_rng([args.seed, 7]))),
        ("Hall's skewness-corrected t only", lambda d, s: run_sequential([d], [s], design, hall_interval)),
        ("Student and Hall together (chosen)", lambda d, s: run_sequential([d], [s], design, procedure_interval)),
    ]
    shape = (args.reps, args.questions)
    data = {"normal": np.random.default_rng([args.seed, 1]).normal(0.0, math.sqrt(1.2), shape),
            "skewed": discrete(np.random.default_rng([args.seed, 2]), SKEWED, shape),
            "strongly skewed": discrete(np.random.default_rng([args.seed, 4]), STRONG, shape),
            "sparse": discrete(np.random.default_rng([args.seed, 3]), SPARSE, shape)}
    shifts = {k: 1.5 * mde(data[k].ravel(), args.questions) for k in ("normal", "skewed")}
    rows = []
    for name, fn in candidates:
        row = {"remedy": name}
        for key, d in data.items():
            row[f"false positives, {key}"] = float((fn(d, 9.0).verdict[:, 0] != 0).mean())
        for key, shift in shifts.items():
            row[f"calls used at 1.5 MDE, {key}"] = float(fn(data[key] + shift, 9.0).used.mean())
        rows.append(row)
    return rows


def one_metric(args, design: Q.Design) -> list[dict]:
    shape = (args.reps, args.questions)
    laws = {"normal": lambda rng: rng.normal(0.0, math.sqrt(1.2), shape),
            "skewed −3/0/+1": lambda rng: discrete(rng, SKEWED, shape),
            "skewed +3/0/−1": lambda rng: discrete(rng, MIRRORED, shape),
            "sparse −1/0/+1": lambda rng: discrete(rng, SPARSE, shape)}
    rows = []
    for i, (name, draw) in enumerate(laws.items()):
        d = draw(np.random.default_rng([args.seed, 10 + i]))
        shift = 1.5 * mde(d.ravel(), args.questions)
        null = run_sequential([d], [9.0], design, procedure_interval)
        alt = run_sequential([d + shift], [9.0], design, procedure_interval)
        truth = np.zeros(1)
        rows.append({"differences": name, "true difference": shift,
                     "false positives": float((null.verdict[:, 0] != 0).mean()),
                     "coverage, no difference": float(covered(null, truth).mean()),
                     "coverage, 1.5 MDE": float(covered(alt, truth + shift).mean()),
                     "calls used": float(alt.used.mean()),
                     "decided": float((alt.verdict[:, 0] != 0).mean()),
                     "agreement with full grading": float((alt.verdict[:, 0] == full_grading(d + shift)).mean())})
    return rows


def default_metrics(args, metrics: list[str]) -> dict:
    design = Q.plan(args.questions, alpha=ALPHA, metrics=len(metrics))
    shift = calibrated_shift(args.seed, args.questions)
    truth_sample = grade_pairs(np.random.default_rng([args.seed, 98]), (1_000_000,), shift)
    truth = np.array([truth_sample[m].mean() for m in metrics])
    out = {"metrics": metrics, "alpha per metric": design.alpha_per_metric, "latent shift": shift,
           "true differences": dict(zip(metrics, truth.tolist(), strict=True))}
    for label, move, expected in (("no difference", 0.0, np.zeros(len(metrics))),
                                  ("1.5 MDE of the grade", shift, truth)):
        pairs = grade_pairs(np.random.default_rng([args.seed, 20 + len(metrics)]), (args.reps, args.questions), move)
        runs = run_sequential([pairs[m] for m in metrics], [SPANS[m] for m in metrics], design, procedure_interval)
        cover = covered(runs, expected[None, :])
        agree = np.column_stack([runs.verdict[:, j] == full_grading(pairs[m]) for j, m in enumerate(metrics)])
        agree_split = np.column_stack([runs.verdict[:, j] == full_grading(pairs[m], design.alpha_per_metric)
                                       for j, m in enumerate(metrics)])
        out[label] = {"any difference declared": float((runs.verdict != 0).any(axis=1).mean()),
                      "calls used": float(runs.used.mean()),
                      "coverage, every metric at once": float(cover.all(axis=1).mean()),
                      "coverage by metric": dict(zip(metrics, cover.mean(axis=0).tolist(), strict=True)),
                      "decided by metric": dict(zip(metrics, (runs.verdict != 0).mean(axis=0).tolist(), strict=True)),
                      "agreement by metric": dict(zip(metrics, agree.mean(axis=0).tolist(), strict=True)),
                      "agreement by metric, full grading at alpha/m":
                          dict(zip(metrics, agree_split.mean(axis=0).tolist(), strict=True)),
                      "agreement, every metric": float(agree.all(axis=1).mean())}
    return out


def default_gate(args) -> dict:
    """The default gate (the primary metric alone) at ±1.5 MDE of the grade, half the runs each way, and
    with no difference."""
    design = Q.plan(args.questions, alpha=ALPHA, metrics=1)
    shift = calibrated_shift(args.seed, args.questions)
    half = args.reps // 2
    rng = np.random.default_rng([args.seed, 50])
    better = grade_pairs(rng, (half, args.questions), shift)["grade"]
    worse = grade_pairs(rng, (args.reps - half, args.questions), -shift)["grade"]
    moved = run_sequential([np.vstack([better, worse])], [SPANS["grade"]], design, procedure_interval)
    null_pairs = grade_pairs(np.random.default_rng([args.seed, 51]), (args.reps, args.questions), 0.0)["grade"]
    null = run_sequential([null_pairs], [SPANS["grade"]], design, procedure_interval)
    fp = float((null.verdict[:, 0] != 0).mean())
    expected = np.concatenate([np.ones(half, dtype=int), -np.ones(args.reps - half, dtype=int)])
    return {"gated": "grade", "latent shift": shift, "calls used at ±1.5 MDE": float(moved.used.mean()),
            "right direction at ±1.5 MDE": float((moved.verdict[:, 0] == expected).mean()),
            "false positives, no difference": fp, "false positives SE": math.sqrt(fp * (1 - fp) / args.reps),
            "calls used, no difference": float(null.used.mean())}


def target_ci(args) -> dict:
    """Baseline grades judged block by block until the confidence sequence's half-width is ≤ TARGET_W."""
    counts = Q.look_counts(args.questions)
    truth = float(grade_pairs(np.random.default_rng([args.seed, 41]), (1_000_000,), 0.0)["baseline grade"].mean())
    rng = np.random.default_rng([args.seed, 40])
    used, cover, reached = [], [], []
    for _ in range(args.cs_reps):
        grades = grade_pairs(rng, (args.questions,), 0.0)["baseline grade"]
        for n in counts:
            cs = Q.confidence_sequence(grades[:n], scale=(1.0, 10.0))
            if cs.half_width <= TARGET_W:
                break
        used.append(n / args.questions)
        reached.append(cs.half_width <= TARGET_W)
        cover.append(cs.low <= truth <= cs.high)
    return {"target half-width": TARGET_W, "runs": args.cs_reps, "true mean grade": truth,
            "calls used": float(np.mean(used)), "target reached": float(np.mean(reached)),
            "coverage at the stop": float(np.mean(cover))}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--questions", type=int, default=400)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--flips", type=int, default=4000, help="sign patterns of the sign-flip candidate")
    p.add_argument("--cs-reps", type=int, default=200, help="runs of the confidence-sequence cell (0: skip)")
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--default-only", action="store_true", help="only the default gate (section 4)")
    args = p.parse_args()
    started = time.perf_counter()
    design = Q.plan(args.questions, alpha=ALPHA)
    print(f"python -m bench.sequential --reps {args.reps} --questions {args.questions} --seed {args.seed} "
          f"--flips {args.flips} --cs-reps {args.cs_reps}" + (" --default-only" if args.default_only else ""))
    print(f"N = {args.questions} in {design.looks} looks at {list(design.counts)}; α = {ALPHA} two-sided; "
          f"one metric's boundaries {[round(c, 3) for c in design.bounds]}")
    figures: dict = {"command": sys.argv, "seed": args.seed, "reps": args.reps, "questions": args.questions,
                     "counts": list(design.counts)}

    if args.default_only:
        _print_default_gate(args, figures)
        return _finish(args, figures, started)
    rows = remedies(args, design)
    figures["remedies"] = rows
    print("\n1. Remedies, gating the mean grade (false positives: share of runs declaring a difference that is "
          "not there; calls: mean share judged at 1.5 × MDE)")
    print(f"{'candidate':44s} {'FP normal':>10s} {'FP skewed':>10s} {'FP strong':>10s} {'FP sparse':>10s} "
          f"{'calls normal':>13s} {'calls skewed':>13s}")
    for r in rows:
        v = list(r.values())
        print(f"{v[0]:44s} {v[1]:10.4f} {v[2]:10.4f} {v[3]:10.4f} {v[4]:10.4f} {_pct(v[5]):>13s} {_pct(v[6]):>13s}")

    rows = one_metric(args, design)
    figures["mean grade"] = rows
    print("\n2. The procedure, gating the mean grade (--fail-on worse:grade)")
    print(f"{'paired differences':18s} {'Δ (1.5 MDE)':>11s} {'FP':>7s} {'cover 0':>8s} {'cover Δ':>8s} {'calls':>7s} "
          f"{'decided':>8s} {'agree':>7s}")
    for r in rows:
        v = list(r.values())
        print(f"{v[0]:18s} {v[1]:11.3f} {v[2]:7.4f} {_pct(v[3]):>8s} {_pct(v[4]):>8s} {_pct(v[5]):>7s} "
              f"{_pct(v[6]):>8s} {_pct(v[7]):>7s}")

    print("\n3. The default gated metrics (grade pairs; α split across the metrics)")
    figures["default metrics"] = []
    for metrics in (["grade", "total", "pass ≥ 7"], ["grade", "total", *[f"pass ≥ {m:g}" for m in PASS_MARKS]]):
        out = default_metrics(args, metrics)
        figures["default metrics"].append(out)
        truth = ", ".join(f"{m} {v:+.3f}" for m, v in out["true differences"].items())
        print(f"  {len(metrics)} metrics ({', '.join(metrics)}), α {out['alpha per metric']:.4f} each; "
              f"true differences at 1.5 MDE of the grade: {truth}")
        for label in ("no difference", "1.5 MDE of the grade"):
            r = out[label]
            per = "; ".join(f"{m}: decided {_pct(r['decided by metric'][m])}, "
                            f"agree {_pct(r['agreement by metric'][m])} "
                            f"({_pct(r['agreement by metric, full grading at alpha/m'][m])} at α/m), "
                            f"cover {_pct(r['coverage by metric'][m])}" for m in metrics)
            print(f"    {label}: any difference declared {r['any difference declared']:.4f}, calls "
                  f"{_pct(r['calls used'])}, every interval covers {_pct(r['coverage, every metric at once'])}, "
                  f"every verdict agrees {_pct(r['agreement, every metric'])}\n      {per}")

    _print_default_gate(args, figures)
    if args.cs_reps:
        out = target_ci(args)
        figures["target ci"] = out
        print(f"\n5. --target-ci {TARGET_W} on the mean grade ({out['runs']} runs, betting confidence sequence): calls "
              f"{_pct(out['calls used'])}, target reached {_pct(out['target reached'])}, coverage at the stop "
              f"{_pct(out['coverage at the stop'])} (true mean {out['true mean grade']:.3f})")
    return _finish(args, figures, started)


def _print_default_gate(args, figures: dict) -> None:
    out = default_gate(args)
    figures["default gate"] = out
    print(f"\n4. The default gate, the mean grade alone (no --fail-on): at ±1.5 MDE of the grade (half the runs "
          f"better, half worse) calls {_pct(out['calls used at ±1.5 MDE'])} (target ≤ 60%), right verdict "
          f"{_pct(out['right direction at ±1.5 MDE'])}; no difference: false positives "
          f"{out['false positives, no difference']:.4f} ± {out['false positives SE']:.4f} SE (target ≤ "
          f"{ALPHA} + 2 SE), calls {_pct(out['calls used, no difference'])}")


def _finish(args, figures: dict, started: float) -> int:
    elapsed = time.perf_counter() - started
    figures["seconds"] = elapsed
    print(f"\n{elapsed:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
