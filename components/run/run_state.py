"""What the edge needs when a command ends badly: :class:`RunState`, on its own so that the command
line makes one for every command without importing the run (:mod:`components.run.benchmark_run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunState:
    """What the edge needs when a run ends badly: the journal holding the work, and the command
    that continues it."""

    journal: Path | None = None
    continue_command: str | None = None
    written: list[Path] = field(default_factory=list)
