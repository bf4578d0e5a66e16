"""One table-transformation-by-example task, as loaded from a Foofah-format file."""
from __future__ import annotations

from dataclasses import dataclass, field

Table = list[list[str]]

# A TestAnswer of exactly this table means the file ships no hidden answer.
NOT_AVAILABLE: Table = [["NOT AVAILABLE, SORRY"]]


@dataclass(frozen=True)
class Case:
    """A validated case.

    ``input_table -> output_table`` is the public example; ``test_table`` is the new input;
    ``test_answer`` is its hidden correct output, or ``None`` when the file has none
    (such cases are traced but left out of scoring).
    """

    case_id: str  # file path relative to the cases root, without extension
    family: str  # TestName, else file stem without trailing _<k> and leading exp0_
    input_table: Table
    output_table: Table
    test_table: Table
    test_answer: Table | None
    num_samples: int | None = None
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def scored(self) -> bool:
        return self.test_answer is not None
