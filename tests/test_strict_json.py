"""The results file is strict JSON with every secret redacted in values AND keys.

Redaction runs on the values before they are serialised: a secret holding ``\\`` or ``"`` or a
control character is escaped by the serialiser, so replacing it in the serialised text misses it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from utils.files.output import write_json_atomic


def strict_loads(text: str):
    def refuse(name: str):
        raise ValueError(f"not strict JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def secret_forms(secret: str) -> list[str]:
    """How a secret shows up in serialised text: as is, JSON-escaped (both ways), repr-escaped."""
    return sorted({secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
                   repr(secret)[1:-1], json.dumps(json.dumps(secret)[1:-1])[1:-1]})


SECRETS = {
    "backslash": "sk-ant-ab\\cd",
    "quote": 'sk-ant-ab"cd',
    "newline": "sk-ant-ab\ncd",
    "escape-char": "sk-ant-\x1b[2Kcd",
    "unicode": "sk-ant-clé-\u2028-😀",
    "plain": "sk-ant-plain-0123456789",
}


@pytest.mark.parametrize("secret", list(SECRETS.values()), ids=list(SECRETS))
def test_secret_redacted_in_values_and_keys(tmp_path: Path, secret: str):
    out = tmp_path / "r.json"
    payload = {
        "value": f"before {secret} after",
        secret: "the key is the secret",
        f"key with {secret} inside": {"nested": [secret, {"deeper": f"x{secret}x"}]},
        "reply": json.dumps({"echo": secret}),  # a judge reply that quotes the key in its own JSON
        "repr": repr({"echo": secret}),
    }
    write_json_atomic(out, payload, secrets=[secret])
    text = out.read_text(encoding="utf-8")
    for form in secret_forms(secret):
        assert form not in text, f"{form!r} leaked"
    data = strict_loads(text)
    assert data["value"] == "before [REDACTED] after"
    assert data["[REDACTED]"] == "the key is the secret"
    assert data["key with [REDACTED] inside"] == {"nested": ["[REDACTED]", {"deeper": "x[REDACTED]x"}]}
    assert data["reply"] == '{"echo": "[REDACTED]"}' and data["repr"] == "{'echo': '[REDACTED]'}"


# (name, payload, what it reads back as)
STRICT = [
    ("nan", {"a": math.nan}, {"a": None}),
    ("inf", {"a": math.inf, "b": -math.inf}, {"a": None, "b": None}),
    ("nested-non-finite", {"a": [1.5, math.nan, {"b": -math.inf}]}, {"a": [1.5, None, {"b": None}]}),
    ("numpy-nan", {"a": np.float64("nan"), "b": np.float32(0.5)}, {"a": None, "b": 0.5}),
    ("numpy-int", {"a": np.int64(3), "b": np.bool_(True)}, {"a": 3, "b": True}),
    ("lone-surrogate-value", {"a": "x\ud800y"}, {"a": "x\ufffdy"}),
    ("lone-surrogate-key", {"k\udfff": 1}, {"k\ufffd": 1}),
    ("surrogate-pair-as-code-points", {"a": "\ud83d\ude00"}, {"a": "😀"}),
    ("huge-int", {"a": 10 ** 5000, "b": 7}, {"a": None, "b": 7}),
    ("non-string-keys", {3: "a", 2.5: "b", None: "c", True: "d"}, {"3": "a", "2.5": "b", "null": "c", "true": "d"}),
    ("tuple-and-set", {"a": (1, 2), "b": {3}}, {"a": [1, 2], "b": [3]}),
    ("control-chars-kept", {"a\x00\x1b": "\r\n\t"}, {"a\x00\x1b": "\r\n\t"}),
]


@pytest.mark.parametrize("payload,expected", [r[1:] for r in STRICT], ids=[r[0] for r in STRICT])
def test_results_are_strict_json(tmp_path: Path, payload, expected):
    out = tmp_path / "r.json"
    write_json_atomic(out, payload)
    assert strict_loads(out.read_text(encoding="utf-8")) == expected


def test_nesting_deeper_than_the_cap_is_cut_not_fatal(tmp_path: Path):
    from utils.files.output import MAX_JSON_DEPTH

    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    out = tmp_path / "r.json"
    write_json_atomic(out, {"deep": deep, "after": 1})
    data = strict_loads(out.read_text())
    assert data["after"] == 1
    depth, node = 0, data["deep"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert depth == MAX_JSON_DEPTH - 1 and node.startswith("[nested deeper than")


def test_a_cycle_is_cut_not_fatal(tmp_path: Path):
    loop: dict = {"name": "a"}
    loop["self"] = loop
    out = tmp_path / "r.json"
    write_json_atomic(out, {"loop": loop})
    assert strict_loads(out.read_text())["loop"] == {"name": "a", "self": "[circular reference]"}


def test_to_strict_json_one_line_form():
    from utils.files.output import to_strict_json

    text = to_strict_json({"a": math.inf, "k": "s3cr3t!"}, ["s3cr3t!"], indent=None)
    assert text == '{"a": null, "k": "[REDACTED]"}'
