"""A panel of judges (``--judges``, the API's ``judges=[...]``): which judges grade, read and checked
once at start-up.

A judge is named by a spec: ``offline``, ``<provider>`` (its default model) or ``<provider>/<model>``
(``anthropic/claude-sonnet-4-5``, ``openai/gpt-4.1``). ``--judges a,b,c`` lists specs; for several
endpoints of one provider (two local servers) a panel file, ``--judges panel.toml``::

    [[judge]]
    name = "local-a"                      # how rows, tables and verdicts name it (default: provider/model)
    provider = "openai"
    model = "llama-3.1-8b-instruct"
    base_url = "http://127.0.0.1:8001/v1"
    api_key_env = "LOCAL_A_KEY"           # the NAME of the variable that holds its key
    timeout = 600                         # seconds per call of this judge (wins over BENCHMARK_JUDGE_TIMEOUT)

Its only fields are ``name``, ``provider``, ``model``, ``base_url``, ``api_key_env`` and ``timeout``;
any other field is refused (its value never shown), so that a key never sits in the file.

Each judge gets the settings a single judge would get from the environment with
``BENCHMARK_JUDGE_MODEL=<provider>/<model>`` (:meth:`Settings.from_env`; ``--judges`` overrides
``BENCHMARK_JUDGE`` and ``BENCHMARK_JUDGE_MODEL``), its ``base_url`` and key put in its provider's own
variables. A judge with a ``base_url`` is sent the key of its ``api_key_env`` only, never the key
the environment holds for the provider's public API. The run's settings are the first judge's,
with every judge's secrets redacted and :attr:`Settings.panel` listing them all.

Bad input is an :class:`InputError` (exit 2): a provider that is not one, a key variable not set, the
same judge twice, a panel file with an unknown field. :func:`check_panel` is the start-up check of
every judge (:func:`components.judges.setup.check_models`), naming the judge that fails.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from components.judges.providers import provider_class, providers
from components.judges.settings import Settings
from components.judges.setup import JudgeSetup, check_models
from utils.errors import InputError, JudgeError
from utils.redaction import looks_like_a_key
from utils.settings import LOOPBACK_JUDGE_TIMEOUT_S, MAX_JUDGE_TIMEOUT_S, seconds, url_password

FIELDS = ("name", "provider", "model", "base_url", "api_key_env", "timeout")
AGGREGATES = ("median", "mean")
MAX_JUDGES = 16
MAX_PANEL_FILE_BYTES = 64_000
_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")  # a variable's name in capitals
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,79}")
_JUDGE_VARIABLES = ("BENCHMARK_JUDGE", "BENCHMARK_JUDGE_MODEL")


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of a panel as the user named it."""

    name: str
    provider: str
    model: str | None = None  # None: the provider's default (or none, for a judge that calls no model)
    base_url: str | None = None
    api_key_env: str | None = None  # the name of the variable holding its key
    timeout: float | None = None  # seconds per call of this judge; None: the run's (BENCHMARK_JUDGE_TIMEOUT...)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}


@dataclass(frozen=True)
class PanelMember:
    """One judge of the panel: its spec and the settings it grades with."""

    spec: JudgeSpec
    settings: Settings

    @property
    def name(self) -> str:
        return self.spec.name


def choose(settings: Settings, one: object, panel: object) -> object:
    """``panel`` when ``settings`` name a panel of judges (``--judges``, ``judges=``), else ``one``: the
    one place a run's judge side is told apart (the engine then asks the object it chose)."""
    return panel if settings.panel else one


def judge_settings(settings: Settings) -> list[Settings]:
    """The settings of each judge: a panel's judges', or the one judge's."""
    return [m.settings for m in settings.panel] or [settings]


def panel_file(value: object) -> Path | None:
    """The panel file a ``--judges`` value names (a path ending in ``.toml``), or None (specs)."""
    if not isinstance(value, (str, Path)):
        return None
    text = str(value).strip()
    return Path(text) if text.lower().endswith(".toml") else None


def parse_judges(value: str | Sequence[str | Mapping | JudgeSpec], option: str = "--judges") -> list[JudgeSpec]:
    """The specs of ``--judges`` (comma-separated specs, or a ``.toml`` panel file) or of the API's
    ``judges=`` (specs, panel-file entries as dicts, or :class:`JudgeSpec`). Raises :class:`InputError`."""
    if (path := panel_file(value)) is not None:
        return read_panel_file(path, option)
    if isinstance(value, (str, Path)):
        items: list = [part.strip() for part in str(value).split(",") if part.strip()]
    else:
        items = list(value)
    specs = []
    for i, item in enumerate(items):
        if isinstance(item, JudgeSpec):
            specs.append(item)
        elif isinstance(item, str):
            specs.append(_from_text(item.strip(), option))
        elif isinstance(item, Mapping):
            specs.append(_from_fields(item, f"{option}: judge #{i + 1}"))
        else:
            raise InputError(f"{option}: judge #{i + 1} is a {type(item).__name__}: give a spec such as "
                             "<provider>/<model>, or a panel-file entry as a dict")
    return check_specs(specs, option)


def _looks_like_a_file(text: str) -> bool:
    """A ``--judges`` item that names a file rather than a judge: an existing path, or a name ending in a
    file extension (``panel.tml``, ``judges.json``)."""
    return Path(text).exists() or re.fullmatch(r"[^/]*\.[A-Za-z][A-Za-z0-9~]{0,7}", text) is not None


def _from_text(text: str, option: str) -> JudgeSpec:
    if _looks_like_a_file(text):
        there = "is not a .toml file" if Path(text).exists() else "no such file"
        raise InputError(f"{option} {text}: {there}: a panel file is a TOML file whose name ends in .toml (or give "
                         "judge specs such as offline,<provider>/<model>)")
    provider, sep, model = text.partition("/")
    provider, model = provider.strip().lower(), model.strip()
    if not provider or (sep and not model):
        raise InputError(f"{option}: {text!r} is not a judge spec: write offline, <provider> or <provider>/<model>")
    provider_class(provider, option)
    return JudgeSpec(f"{provider}/{model}" if model else provider, provider, model or None)


def _from_fields(entry: Mapping, where: str) -> JudgeSpec:
    """A panel-file entry: its fields checked; an unknown field is named, its value never shown."""
    unknown = [str(key) for key in entry if key not in FIELDS]
    if unknown:
        raise InputError(f"{where}: unknown field {unknown[0][:40]!r} (its value is not shown): a judge has only "
                         f"{', '.join(FIELDS)}; a key goes in an environment variable that api_key_env names")
    values: dict[str, str | None] = {}
    timeout = _judge_timeout(entry.get("timeout"), where)
    for name in FIELDS[:-1]:
        value = entry.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}: {name} is not a string: write it in quotes")
        values[name] = value.strip() if isinstance(value, str) and value.strip() else None
    if values["provider"] is None:
        raise InputError(f"{where}: no provider: name one (a judge provider: {', '.join(providers())})")
    provider = values["provider"].lower()
    provider_class(provider, f"{where}: provider")
    variable = values["api_key_env"]
    if variable is not None and (looks_like_a_key(variable) or not _VARIABLE.fullmatch(variable)):
        raise InputError(f"{where}: api_key_env must be the NAME of the environment variable that holds the key, "
                         "in capitals (e.g. LOCAL_A_KEY), never the key itself (its value is not shown)")
    model = values["model"]
    name = values["name"] or (f"{provider}/{model}" if model else provider)
    return JudgeSpec(name, provider, model, values["base_url"], variable, timeout)


def _judge_timeout(value: object, where: str) -> float | None:
    """A panel judge's ``timeout``: seconds above 0 and at most the judge timeout's maximum, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{where}: timeout is not a number of seconds: write e.g. timeout = 300")
    return seconds(f"{where}: timeout", str(value), LOOPBACK_JUDGE_TIMEOUT_S, 0.0, MAX_JUDGE_TIMEOUT_S, above_low=True)


def check_specs(specs: Sequence[JudgeSpec], option: str = "--judges") -> list[JudgeSpec]:
    """``specs`` as a panel: at least one, at most :data:`MAX_JUDGES`, names usable as keys, no judge twice."""
    if not specs:
        raise InputError(f"{option} names no judge: give one or more, e.g. --judges offline,<provider>/<model>")
    if len(specs) > MAX_JUDGES:
        raise InputError(f"{option}: {len(specs)} judges, more than {MAX_JUDGES}: give fewer")
    names: set[str] = set()
    judges: dict[tuple, str] = {}
    for spec in specs:
        if not _NAME.fullmatch(spec.name):
            raise InputError(f"{option}: the judge name {spec.name[:80]!r} is not a name: use letters, digits and "
                             "._:/@+- (at most 80 characters)")
        same = (spec.provider, spec.model, spec.base_url)
        if spec.name in names:
            raise InputError(f"{option}: the judge {spec.name!r} appears twice: each judge of a panel is named once "
                             "(two endpoints of one provider need a panel file with a name each)")
        if same in judges:
            where = f" at {spec.base_url}" if spec.base_url else ""
            raise InputError(f"{option}: the judges {judges[same]!r} and {spec.name!r} are the same judge (provider "
                             f"{spec.provider}, model {spec.model or 'its default'}{where}): list each endpoint "
                             "once, or give the second another model or base_url")
        names.add(spec.name)
        judges[same] = spec.name
    return list(specs)


def read_panel_file(path: Path, option: str = "--judges") -> list[JudgeSpec]:
    """The judges of a panel file (module docstring). Raises :class:`InputError` naming the file."""
    from utils.files.lines import open_regular

    fh, _ = open_regular(path, messages={
        "missing": f"{option} {{path}}: no such panel file: give the path of one, or specs such as "
                   "offline,<provider>/<model>",
        "unreadable": f"{option} {{path}}: cannot be read ({{reason}}): check the path",
        "kind": f"{option} {{path}} is {{kind}}, not a panel file: give the path of a .toml file"})
    try:
        with fh:
            data = fh.read(MAX_PANEL_FILE_BYTES + 1)
    except OSError as err:
        raise InputError(f"{option} {path}: cannot be read ({err.strerror}): check the path") from None
    if len(data) > MAX_PANEL_FILE_BYTES:
        raise InputError(f"{option} {path}: over {MAX_PANEL_FILE_BYTES:,} bytes, too large for a panel file")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        where = re.search(r"\(at line \d+, column \d+\)", str(err))
        raise InputError(f"{option} {path}: not valid TOML{' ' + where.group() if where else ''}: write one "
                         "[[judge]] table per judge") from None
    unknown = [str(key) for key in doc if key != "judge"]
    if unknown or not isinstance(doc.get("judge"), list):
        what = f"unknown field {unknown[0][:40]!r} (its value is not shown)" if unknown else "no [[judge]] table"
        raise InputError(f"{option} {path}: {what}: the file holds [[judge]] tables only, each with "
                         f"{', '.join(FIELDS)}")
    entries = doc["judge"]
    if not all(isinstance(entry, dict) for entry in entries):
        raise InputError(f"{option} {path}: every judge is a [[judge]] table")
    return check_specs([_from_fields(entry, f"{option} {path}: judge #{i + 1}") for i, entry in enumerate(entries)],
                       f"{option} {path}")


def _member_env(spec: JudgeSpec, env: Mapping[str, str]) -> dict[str, str]:
    """The environment one judge is read from (module docstring)."""
    out = {k: v for k, v in env.items() if k not in _JUDGE_VARIABLES}
    if spec.model:
        out["BENCHMARK_JUDGE_MODEL"] = f"{spec.provider}/{spec.model}"
    else:
        out["BENCHMARK_JUDGE"] = spec.provider
    if spec.base_url is None and spec.api_key_env is None:
        return out
    cls = provider_class(spec.provider)
    key_variable, url_variable = getattr(cls, "key_variable", None), getattr(cls, "base_url_variable", None)
    if key_variable is None or url_variable is None:
        raise InputError(f"the {spec.provider} provider takes no base_url or key: leave them out")
    if spec.base_url is not None:
        out[url_variable] = spec.base_url
        for variable in cls.variables:  # the environment's key is for the provider's own endpoint: not sent here
            if variable.secret:
                out.pop(variable.name, None)
    if spec.api_key_env is not None:
        key = env.get(spec.api_key_env)
        if not key:
            raise InputError(f"api_key_env names {spec.api_key_env}, which is not set: export "
                             f"{spec.api_key_env} with the judge's key")
        out[key_variable] = key
    return out


def panel_settings(specs: Sequence[JudgeSpec], env: Mapping[str, str]) -> Settings:
    """The run's settings for the panel ``specs``: the first judge's, with ``panel`` and every
    judge's secrets (module docstring). Raises :class:`InputError` naming the judge."""
    members = []
    for spec in check_specs(specs):
        try:
            settings = Settings.from_env(_member_env(spec, env))
        except InputError as err:
            raise InputError(f"judge {spec.name}: {err}") from None
        if spec.timeout is not None:  # the judge's own timeout wins
            settings = replace(settings, judge_timeout=spec.timeout, timeout_source="timeout")
        members.append(PanelMember(spec, settings))
    secrets = tuple(dict.fromkeys(s for m in members for s in m.settings.secrets))
    return replace(members[0].settings, panel=tuple(members), secrets=secrets)


def check_panel(settings: Settings, *, rewrites_queries: bool = False) -> list[JudgeSetup]:
    """The start-up check of every judge of ``settings.panel`` (the query rewriter with the first
    one's), before any grading call; the error names the judge: :class:`InputError` (exit 2), or
    a :class:`JudgeError` (exit 3) when a judge is unusable (key refused, model gone, unreachable)."""
    setups = []
    for i, member in enumerate(settings.panel):
        try:
            setups.append(check_models(member.settings, rewrites_queries=rewrites_queries and i == 0))
        except InputError as err:
            raise InputError(f"judge {member.name}: {_file_terms(member.spec, str(err))}") from None
        except JudgeError as err:
            raise JudgeError(err.kind, f"judge {member.name}: {_file_terms(member.spec, str(err))}",
                             fatal=err.fatal) from None
    return setups


def _file_terms(spec: JudgeSpec, text: str) -> str:
    """A provider's message about a judge whose endpoint or key come from a panel file, in the file's
    terms: its ``base_url`` and ``api_key_env`` where the provider names its own variables."""
    cls = provider_class(spec.provider)
    url_variable, key_variable = getattr(cls, "base_url_variable", None), getattr(cls, "key_variable", None)
    if spec.base_url is not None and url_variable:
        text = text.replace(url_variable, "the base_url of this judge in the panel file")
    if spec.api_key_env is not None and key_variable:
        text = text.replace(key_variable, f"{spec.api_key_env} (this judge's api_key_env)")
    return text


def check_aggregate(name: str) -> str:
    """``--panel-aggregate``: median or mean."""
    value = (name or "").strip().lower()
    if value not in AGGREGATES:
        raise InputError(f"--panel-aggregate {name!r}: write median or mean")
    return value


def recorded_keys(results: Sequence[object], env: Mapping[str, str]) -> list[str]:
    """The keys ``env`` holds in the variables that the panels of ``results`` (typed runs) name as a judge's
    ``api_key_env``: what a command reading those results redacts beside the providers' own."""
    found = []
    for result in results:
        judges = getattr(getattr(getattr(result, "run", None), "judge", None), "details", {}).get("judges")
        for judge in judges if isinstance(judges, list) else []:
            variable = judge.get("api_key_env") if isinstance(judge, Mapping) else None
            if isinstance(variable, str) and _VARIABLE.fullmatch(variable) and env.get(variable):
                found.append(env[variable])
    return list(dict.fromkeys(found))


def panel_secrets(value: object, env: Mapping[str, str]) -> list[str]:
    """The secrets a ``--judges`` panel file brings (the keys its ``api_key_env`` variables hold, the
    passwords of its base URLs), for the log sinks opened before it is read. Never raises: a file
    that cannot be read gives none (the run then refuses it)."""
    from utils.files.lines import open_regular

    if not isinstance(value, str) or (path := panel_file(value)) is None:
        return []
    try:
        fh, _ = open_regular(path, what="panel file", fix="")  # a FIFO or a device is never read (refused later)
        with fh:
            doc = tomllib.loads(fh.read(MAX_PANEL_FILE_BYTES).decode("utf-8"))
    except (OSError, InputError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    found = []
    for entry in doc.get("judge") if isinstance(doc.get("judge"), list) else []:
        if not isinstance(entry, dict):
            continue
        variable, url = entry.get("api_key_env"), entry.get("base_url")
        if isinstance(variable, str) and _VARIABLE.fullmatch(variable.strip()) and env.get(variable.strip()):
            found.append(env[variable.strip()])
        if isinstance(url, str) and url_password(url):
            found.append(url_password(url))
    return found
