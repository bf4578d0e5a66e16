"""One transformation-by-example task: public examples, a new input, its hidden answer.

A value is any JSON value: a table (rows of strings, Foofah), a grid (rows of ints, ARC), a list,
a string, a number. Foofah files give one example of string tables; ARC-format files give several
examples of grids (``cases.arc``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Table = list[list[str]]

# A TestAnswer of exactly this table means the file ships no hidden answer.
NOT_AVAILABLE: Table = [["NOT AVAILABLE, SORRY"]]

VALUE_TYPES = ("table", "grid", "json")  # the sandbox kinds a task's outputs are checked against


@dataclass(frozen=True)
class Example:
    """One public example: ``input -> output``."""

    input: Any
    output: Any


class OneExampleViews:
    """One-example views (the first example), for code that reads the Foofah shape; shared by
    ``Case`` and the task a backend sees (``tracegen.backends.base.Task``)."""

    @property
    def input_table(self):
        return self.examples[0].input

    @property
    def output_table(self):
        return self.examples[0].output

    @property
    def test_table(self):
        return self.test_input


@dataclass(frozen=True)
class Case(OneExampleViews):
    """A validated case.

    ``examples`` are the public examples (at least one); ``test_input`` is the new input;
    ``test_answer`` is its hidden correct output, or ``None`` when the source has none (such cases
    are traced but left out of scoring). ``value_type`` is the sandbox kind the outputs are
    checked against (``cases.values.value_type_of``); ``entry`` the function programs define.
    """

    case_id: str  # file path relative to the cases root, without extension (ARC: ``#<i>`` per test)
    family: str  # Foofah: TestName, else file stem without trailing _<k> and leading exp0_; ARC: folder
    examples: tuple[Example, ...]
    test_input: Any
    test_answer: Any | None
    value_type: str = "table"
    entry: str = "transform"
    num_samples: int | None = None
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.examples:
            raise ValueError(f"case {self.case_id!r} has no public example")
        if self.value_type not in VALUE_TYPES:
            raise ValueError(f"case {self.case_id!r}: value_type {self.value_type!r} is not one of {VALUE_TYPES}")

    @classmethod
    def from_tables(cls, case_id: str, family: str, input_table: Table, output_table: Table, test_table: Table,
                    test_answer: Table | None, num_samples: int | None = None, meta: dict | None = None) -> Case:
        """A one-example table case (the Foofah shape)."""
        return cls(case_id, family, (Example(input_table, output_table),), test_table, test_answer,
                   num_samples=num_samples, meta=dict(meta or {}))

    @property
    def scored(self) -> bool:
        return self.test_answer is not None
