"""Progress a person can follow, on a terminal or in a log file.

On a terminal (stderr is a tty) a tqdm bar; otherwise plain lines, one when the first item
finishes, then one every ``interval_s`` seconds (or every ``every`` items when that is set) and
one at the end, with no carriage returns, so a log file reads top to bottom. A long wait between
items (one slow backend call) still gets a line every ``interval_s`` saying what is running, and
how many of the running stage's requests (generations) have finished (``set_generations``, which
a model backend drives as each request finishes) and, while a batch decodes, its tokens so far
(``set_decoding``): ``tracing: 0/4 cases, 40s, first programs, generations 3/8, decoding token
57/96``.
"""
from __future__ import annotations

import sys
import threading
import time


def is_terminal(stream=None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Progress:
    """Count finished items out of ``total``; ``stage`` names what is running now (e.g. "round 2")."""

    def __init__(self, total: int, desc: str, unit: str = "case", *, enabled: bool = True, every: int = 0,
                 interval_s: float = 10.0, stream=None, bar: bool | None = None, eta_after: int = 1):
        self.total, self.desc, self.unit = total, desc, unit
        # items of one wave finish together at its end, a few early ones long before: a rate from
        # them alone promises hours for minutes, so no estimate before a whole wave is done
        self.eta_after = max(1, eta_after)
        self.enabled, self.every, self.interval_s = enabled, every, interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.stage, self.extra = 0, "", ""
        self.generations: tuple[int, int] | None = None  # (finished, sent) requests of the running stage
        self.decoding: tuple[int, int] | None = None  # (tokens, limit) of the batch a backend decodes now
        self.t0 = time.monotonic()
        self._last_line_t: float | None = None
        self._last_line_done = -1
        self._bar = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if enabled and (is_terminal(self.stream) if bar is None else bar):
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream)
        if enabled and total:
            threading.Thread(target=self._heartbeat, name=f"progress-{desc}", daemon=True).start()

    def _heartbeat(self) -> None:
        """The bar's clock keeps running, and a log gets a line when nothing moved for a while."""
        while not self._stop.wait(1.0 if self._bar is not None else min(self.interval_s, 1.0)):
            with self._lock:
                if self._stop.is_set():
                    return
                if self._bar is not None:
                    self._bar.refresh()
                elif time.monotonic() - (self._last_line_t or self.t0) >= self.interval_s:
                    self._line(time.monotonic())

    @property
    def is_bar(self) -> bool:
        return self._bar is not None

    def set_stage(self, stage: str) -> None:
        with self._lock:
            self.stage = stage
            if self._bar is not None:
                self._bar.set_postfix_str(self._status(), refresh=False)

    def set_generations(self, done: int, total: int) -> None:
        """``done`` of the ``total`` requests of the running stage have finished (any thread)."""
        with self._lock:
            if self.generations != (done, total):
                self.decoding = None  # a request ended or a stage began: the next step says more
            self.generations = (done, total)
            if self._bar is not None:
                self._bar.set_postfix_str(self._status(), refresh=False)

    def set_decoding(self, tokens: int, limit: int) -> None:
        """The batch a backend decodes now has ``tokens`` of at most ``limit`` new tokens (any thread)."""
        with self._lock:
            self.decoding = (tokens, limit)
            if self._bar is not None:
                self._bar.set_postfix_str(self._status(), refresh=False)

    def _status(self) -> str:
        parts = [self.stage]
        if self.generations:
            parts.append(f"generations {self.generations[0]}/{self.generations[1]}")
        if self.decoding:
            parts.append(f"decoding token {self.decoding[0]}/{self.decoding[1]}")
        return ", ".join(p for p in parts if p)

    def update(self, n: int = 1, extra: str = "") -> None:
        """``n`` more items finished; ``extra`` is a short status appended to the line."""
        with self._lock:
            self._update(n, extra)

    def _update(self, n: int, extra: str) -> None:
        self.done += n
        self.extra = extra or self.extra
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        due = (self._last_line_t is None and self.done > 0) or self.done >= self.total
        if self.every:
            due = due or self.done // self.every > self._last_line_done // self.every
        else:
            due = due or (self._last_line_t is not None and now - self._last_line_t >= self.interval_s)
        if due and (self.done != self._last_line_done or self.done == self.total):
            self._line(now)

    def line(self) -> str:
        elapsed = time.monotonic() - self.t0
        parts = [f"{self.desc}: {self.done}/{self.total} {self.unit}s", f"{elapsed:.0f}s"]
        if self.eta_after <= self.done < self.total:
            parts.append(f"~{elapsed / self.done * (self.total - self.done):.0f}s left")
        parts += [p for p in (self._status(), self.extra) if p]
        return ", ".join(parts)

    def _line(self, now: float) -> None:
        print(self.line(), file=self.stream, flush=True)
        self._last_line_t, self._last_line_done = now, self.done

    def write(self, text: str) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.write(text, file=self.stream)
            elif self.enabled:
                print(text, file=self.stream, flush=True)

    def close(self) -> None:
        with self._lock:
            self._stop.set()
            if self._bar is not None:
                self._bar.close()
            elif self.enabled and self.done and self.done != self._last_line_done:
                self._line(time.monotonic())
