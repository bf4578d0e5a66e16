"""LoRA policies trained and scored in a side process, so that their cost overlaps the rest.

torch, transformers and peft take ~8 s to import on a 2-core machine and the default policy
~9 s to train and score, on one core (``LoraPolicyConfig.cpu_threads``); the learned rule, the
null baselines, the other policies' simulations and the statistics need none of it. A
``LoraWorker`` is a child process (a fresh interpreter, started with ``subprocess`` so that the
caller's ``__main__`` is never re-imported) that imports those libraries as soon as it starts and
then serves requests over a socket pair, in order: ``train`` sends a training and returns at once
with a ``RemoteLoraPolicy``, whose ``meta`` and ``choose`` wait for that training to finish.
Requests and replies are small (states' texts, chosen actions, the training's ``meta``). A run
that traces starts its worker before tracing, the imports niced (``LoraWorker(nice=...)``), so
that they use the moments the synthesizer's pool leaves a core idle.

The worker calls the same ``train_lora_policy`` with the same arguments (its seeds, thread count
and deterministic algorithms are set inside it), so the adapter it writes and every score it
returns are those of a training in the calling process; only the memory figure
(``peak_rss_mb``) is the worker's own. An exception in the worker is raised again in the caller
where the result is needed, with the worker's traceback as a note.
"""
from __future__ import annotations

import pickle
import traceback
from typing import Any, Callable, Sequence

# The child's command: the caller's import path first (a checkout run by the script shim finds
# ``controller`` the same way), then serve on the inherited socket.
_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
         "from controller.learn.lora_worker import _main; _main(int(sys.argv[2]), int(sys.argv[3]))")


def _main(fd: int, nice: int = 0) -> None:
    import os
    import sys
    from multiprocessing.connection import Connection

    _serve(Connection(fd), nice)
    # the caller is gone and everything is written: skip the interpreter's teardown of torch
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve(conn, nice: int = 0) -> None:
    """The worker's loop: import (at ``nice`` more niceness, see ``LoraWorker``), then answer
    "train" and "choose" requests in order until the caller closes its end (or terminates the
    process); a "drop" frees a policy the caller no longer holds."""
    import gc
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle; it closes us
    from tracegen import held_warnings

    if os.environ.get(held_warnings.HOLD_ENV) == "1":  # the caller summarises warnings: count ours
        held_warnings.hold()
    was = os.getpriority(os.PRIO_PROCESS, 0)
    if nice > 0:
        os.nice(nice)
    from controller.learn.lora import train_lora_policy  # noqa: F401  (and what a training needs:)
    import peft  # noqa: F401
    import torch  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    if nice > 0:
        try:  # back to the caller's priority for the trainings; an unprivileged user may not
            os.setpriority(os.PRIO_PROCESS, 0, was)
        except PermissionError:
            pass

    policies: dict[int, Any] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the caller is gone
            return
        op = msg[0]
        try:
            if op == "train":
                _, key, args, kwargs = msg
                policies[key] = train_lora_policy(*args, **kwargs)
                reply = (True, policies[key].meta)
            elif op == "choose":
                _, key, prompts, valid = msg
                reply = (True, policies[key].choose(prompts, valid))
            elif op == "drop":  # the caller let go of this policy: free its model (no reply)
                policies.pop(msg[1], None)
                gc.collect()
                continue
            elif op == "held":  # how many policies this process keeps (the tests ask)
                reply = (True, len(policies))
            elif op == "warnings":  # what this process held back, for the caller's summary line
                reply = (True, dict(held_warnings.ACTIVE.counts) if held_warnings.ACTIVE else {})
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as err:  # noqa: BLE001  (sent back and raised in the caller)
            reply = (False, _portable(err))
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            return


def _portable(err: Exception) -> Exception:
    """``err`` with the worker's traceback as a note, or a RuntimeError saying it when it cannot be pickled."""
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:  # noqa: BLE001
        return RuntimeError(f"in the LoRA worker: {type(err).__name__}: {err}\n{tb}")
    if hasattr(err, "add_note"):  # Python >= 3.11
        err.add_note(f"in the LoRA worker process:\n{tb}")
    return err


class LoraWorker:
    """One side process for every LoRA training of a run (``with LoraWorker() as w: ...``).

    ``while_waiting``: something the caller needs later and can do while it would otherwise
    wait for a reply (run once, the first time a reply is not there yet). ``nice``: niceness added
    while the worker imports, for a caller that starts it while it keeps every core busy itself
    (tracing): the imports then take the cores' idle moments instead of slowing the caller. The
    worker goes back to its starting priority for the trainings where the system lets it (an
    unprivileged process may not lower its niceness again, so it may stay that much nicer)."""

    def __init__(self, while_waiting: Callable[[], Any] | None = None, nice: int = 0) -> None:
        import json
        import os
        import socket
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        from tracegen import held_warnings

        ours, theirs = socket.socketpair()
        env = {**os.environ, held_warnings.HOLD_ENV: "1"} if held_warnings.ACTIVE is not None else None
        with theirs:
            self._proc = subprocess.Popen([sys.executable, "-c", _BOOT, json.dumps(sys.path), str(theirs.fileno()),
                                           str(max(0, int(nice)))],
                                          pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env)
        self._conn = Connection(ours.detach())
        self._sent = self._received = 0
        self._replies: dict[int, tuple] = {}
        self._callbacks: dict[int, Callable] = {}
        self._dropped: list[int] = []  # tickets of policies the caller let go of, sent with the next request
        self._while_waiting = while_waiting

    def _request(self, *msg) -> int:
        while self._dropped:  # drops first, so the worker frees those models before it trains again
            self._conn.send(("drop", self._dropped.pop()))
        self._conn.send(msg)
        self._sent += 1
        return self._sent - 1

    def _reply(self, ticket: int):
        """The reply to request ``ticket`` (replies come in request order; earlier ones are kept
        until read; each is read once)."""
        if ticket < self._received and ticket not in self._replies:
            raise RuntimeError(f"LoRA worker: reply {ticket} was already read")
        while ticket not in self._replies:
            if self._while_waiting is not None and not self._conn.poll():
                todo, self._while_waiting = self._while_waiting, None
                todo()
            try:
                reply = self._conn.recv()
            except (EOFError, OSError):
                raise RuntimeError(f"the LoRA worker process exited (status {self._proc.wait()})") from None
            self._replies[self._received] = reply
            callback = self._callbacks.pop(self._received, None)
            self._received += 1
            if reply[0] and callback is not None:
                callback(reply[1])
        ok, value = self._replies.pop(ticket)
        if not ok:
            raise value
        return value

    def train(self, examples, config, out_dir: str, *, progress: bool = True, dev_examples=None,
              on_trained: Callable[[dict], None] | None = None) -> "RemoteLoraPolicy":
        """Send ``train_lora_policy(examples, config, out_dir, ...)``; ``on_trained(meta)`` runs when
        its result is read (by the policy's ``meta`` or ``choose``, or while waiting for a later reply)."""
        ticket = self._request("train", self._sent, (list(examples), config, out_dir),
                               {"progress": progress, "dev_examples": dev_examples})
        if on_trained is not None:
            self._callbacks[ticket] = on_trained
        return RemoteLoraPolicy(self, ticket, config)

    def _drop(self, ticket: int) -> None:
        """Let the worker free the policy of training ``ticket``: queued, and sent (without a reply,
        so the request order the replies follow is untouched) ahead of the next request. Never sent
        here: this runs from ``__del__``, which garbage collection may call in the middle of a send."""
        self._dropped.append(ticket)

    def held(self) -> int:
        """How many trained policies the worker keeps now."""
        return self._reply(self._request("held"))

    def close(self) -> None:
        """Stop the process now. Whatever it wrote is complete (a training saves its adapter before
        it replies); a training still running (an error or Ctrl-C left its reply unread) is dropped."""
        import subprocess

        self._collect_warnings()
        try:
            self._proc.terminate()
            self._proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            self._conn.close()

    def _collect_warnings(self) -> None:
        """Add the worker's held-back warnings to this process's summary: asked only when every
        reply is in (after an error or Ctrl-C a training may still run; its warnings go unsaid)."""
        from tracegen import held_warnings

        if held_warnings.ACTIVE is None or self._received != self._sent or self._proc.poll() is not None:
            return
        try:
            self._conn.send(("warnings",))
            if self._conn.poll(5):
                ok, counts = self._conn.recv()
                if ok:
                    held_warnings.ACTIVE.counts.update(counts)
        except (EOFError, OSError):
            pass

    def __enter__(self) -> "LoraWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RemoteLoraPolicy:
    """A ``LoraPolicy`` that lives in the worker: ``meta`` and ``choose`` as the real one."""

    def __init__(self, worker: LoraWorker, ticket: int, config) -> None:
        self._worker, self._ticket, self.config = worker, ticket, config
        self._meta: dict | None = None
        self._error: Exception | None = None

    @property
    def meta(self) -> dict:
        """What ``lora_policy.json`` holds (waits for the training; raises its error)."""
        if self._error is not None:
            raise self._error
        if self._meta is None:
            try:
                self._meta = self._worker._reply(self._ticket)
            except Exception as err:
                self._error = err
                raise
        return self._meta

    def __del__(self) -> None:
        # a fold's policy is gone once the fold is scored: without this the worker kept every
        # model it trained (a pretrained base: ~0.6 GB more resident memory per training)
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker._drop(self._ticket)

    def choose(self, prompts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[str]:
        self.meta  # the training's result first (or its error)
        return self._worker._reply(self._worker._request("choose", self._ticket, list(prompts),
                                                         [tuple(v) for v in valid_actions]))
