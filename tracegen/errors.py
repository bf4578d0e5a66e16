"""``ConfigError``: a config holds a value that cannot work, named by its field, not by a flag.

A message names fields between backticks (```temperature```, ```rollout.program_samples```).
``str(err)`` shows them as field names (what a Python caller wrote); the command line shows the
same error with its flags through one mapping field -> flag (``controller.args``)."""
from __future__ import annotations

import re

_NAME = re.compile(r"`([A-Za-z_][\w.]*)`")


class ConfigError(ValueError):
    """``field``: the dotted path of the field at fault (None: no one field); ``problem``: the
    one-line text, naming other fields as ```path```, relative to the same config."""

    def __init__(self, problem: str, field: str | None = None):
        self.problem, self.field = problem, field
        super().__init__(self.render())

    def within(self, prefix: str) -> "ConfigError":
        """The same error seen from the config that holds this one under ``prefix``."""
        self.field = f"{prefix}.{self.field}" if self.field else None
        self.problem = _NAME.sub(lambda m: f"`{prefix}.{m.group(1)}`", self.problem)
        self.args = (self.render(),)
        return self

    def render(self, name=lambda path: path) -> str:
        """The message with every field shown as ``name(path)`` (e.g. its flag)."""
        text = _NAME.sub(lambda m: name(m.group(1)), self.problem)
        return f"{name(self.field)}: {text}" if self.field else text

    def __str__(self) -> str:
        return self.render()


def check(ok: bool, field: str, problem: str) -> None:
    """Raise ``ConfigError(problem, field)`` unless ``ok``."""
    if not ok:
        raise ConfigError(problem, field)
