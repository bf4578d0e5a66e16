"""The scripted backend of the tests (inspect_ai's ``MockLLM`` habit): an ordinary ``Backend``
fed a dict keyed by ``(kind, round, sample)`` or a callable ``request -> text | Completion``.
It records every batch (``batches``: the requests of each call) and the last messages of each key
(``seen``). ``tests/conftest.py`` hands it out as the ``scripted`` fixture."""
from __future__ import annotations

from tracegen.backends import Backend, BackendConfig, Completion

JSON_X = '```json\n[["x"]]\n```'


def program(code: str) -> str:
    """A model answer holding ``code`` in a python fence."""
    return f"```python\n{code}\n```"


class ScriptedBackend(Backend):
    name = "scripted"

    def __init__(self, answer, model: str = "m", tokens: tuple[int, int] = (10, 10), search_nodes: int = 0,
                 config: BackendConfig | None = None):
        super().__init__(config or BackendConfig(name="scripted", model=model))
        self.answer, self.tokens, self.search_nodes = answer, tokens, search_nodes
        self.batches: list[list] = []
        self.seen: dict = {}

    @property
    def calls(self) -> list[int]:
        """The size of every batch, in order."""
        return [len(b) for b in self.batches]

    def generate(self, requests):
        self.batches.append(list(requests))
        out = []
        for r in requests:
            key = (r.kind, r.round, r.sample)
            self.seen[key] = r.messages
            got = self.answer[key] if isinstance(self.answer, dict) else self.answer(r)
            out.append(got if isinstance(got, Completion) else
                       Completion(got, *self.tokens, 1.0, search_nodes=self.search_nodes))
        return out
