"""Quality bands: the evaluator's bands and presentation lines at their boundaries, in the results
(and the schema), the summary and the report."""

from __future__ import annotations

import json

import pytest

from components.analysis.aggregate import build_report
from components.report.page import render_report
from tests.test_aggregate import ROWS
from utils.console import summary_table
from utils.quality_bands import NDCG, PRECISION, band_text, quality_bands
from utils.results import RunInfo, RunResult
from utils.records.schema import json_schema


@pytest.mark.parametrize("value,band,line", [
    (1.0, "Excellent", "Near-perfect ranking"), (0.9, "Excellent", "Near-perfect ranking"),
    (0.8999, "Good", "Strong ranking quality"), (0.7, "Good", "Strong ranking quality"),
    (0.6999, "Fair", "Acceptable, room for improvement"), (0.5, "Fair", "Acceptable, room for improvement"),
    (0.4999, "Poor", "Needs significant work"), (0.0, "Poor", "Needs significant work"),
])
def test_ndcg_bands_and_lines(value, band, line):
    assert NDCG.band(value) == band and NDCG.line(band, 5) == line


@pytest.mark.parametrize("value,band,line", [
    (0.8, "Excellent", "≥ 80% of top 10 are relevant"), (0.7999, "Good", "Most top results are relevant"),
    (0.6, "Good", "Most top results are relevant"), (0.5999, "Fair", "Mixed relevance in top results"),
    (0.4, "Fair", "Mixed relevance in top results"), (0.3999, "Poor", "Few top results are relevant"),
])
def test_precision_bands_and_lines(value, band, line):
    assert PRECISION.band(value) == band and PRECISION.line(band, 10) == line


def test_the_banded_metrics_a_run_has_with_the_bands_their_interval_reaches():
    bands = quality_bands({"ndcg_at_k": 0.72, "context_precision": 0.85, "mrr": 0.9, "proxy_precision_at_k": None},
                          5, {"ndcg_at_k": [0.55, 0.88], "context_precision": [0.8, 0.9]})
    assert list(bands) == ["ndcg_at_k", "context_precision"]  # mrr has no band; a null value none
    assert bands["ndcg_at_k"].to_json() == {"label": "nDCG@5", "value": 0.72, "band": "Good",
                                            "line": "Strong ranking quality",
                                  "ci95_bands": ["Fair", "Good"]}
    assert band_text(bands["ndcg_at_k"]) == "Good: Strong ranking quality (95% CI: Fair to Good)"
    assert band_text(bands["context_precision"]) == "Excellent: ≥ 80% of top 5 are relevant"  # the CI stays in it
    assert quality_bands({"ndcg_at_k": 0.3}, 5)["ndcg_at_k"].ci95_bands is None


def test_a_run_records_its_bands_and_the_schema_has_them(tmp_path):
    result = build_report(RunInfo(k=5), ROWS)  # nDCG 0.504 (hand-computed in test_aggregate), precision 0.2
    assert result.quality_bands["ndcg_at_k"].band == "Fair"
    assert result.quality_bands["context_precision"].band == "Poor"
    assert "proxy_precision_at_k" not in result.quality_bands  # no chunk relevance
    data = json.loads(json.dumps(result.to_json()))
    assert data["quality_bands"]["ndcg_at_k"]["line"] == "Acceptable, room for improvement"
    assert RunResult.from_json(data).quality_bands == result.quality_bands
    assert "quality_bands" in json_schema()["properties"]


def test_the_summary_and_the_report_show_the_bands():
    result = build_report(RunInfo(k=5), ROWS)
    text = summary_table(result, proxy=False)
    assert "quality            nDCG@5 Fair: Acceptable, room for improvement" in text
    assert "context precision Poor: Few top results are relevant" in text
    html = render_report([result], ["run"])
    assert "<tr><th>nDCG@5 band</th><td colspan=2>Fair: Acceptable, room for improvement" in html


def test_the_report_gives_a_file_written_before_bands_its_bands():
    data = build_report(RunInfo(k=5), ROWS).to_json()
    del data["quality_bands"]
    html = render_report([RunResult.from_json(data)], ["older"])
    assert "<tr><th>context precision band</th><td colspan=2>Poor: Few top results are relevant" in html
