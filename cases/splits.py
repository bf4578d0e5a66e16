"""Family-disjoint train/dev/test splits, cross-validation folds and the split manifest.

Splits are made over family names, never over cases, so no family leaks between splits. By
default (``method = "seeded_shuffle"``) a split and the CV folds depend on the seed and the
family names only: no answer, grade or model output can move a family.

Opt-in ("headroom_probe"): "headroom" families (where a program is right while the direct answer
is wrong) can be dealt out first so every split gets some. Deciding that reads hidden answers, so
it may look only at *probe cases* (``probe_cases``: one per family, chosen from the seed and the
case ids alone) and those cases are then left out of every score; the manifest lists them.

Not covered: stratifying by anything else (family size, difficulty); assigning cases to
families (that is the loader's job).
"""
from __future__ import annotations

import json
import random
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

SPLITS = ("train", "dev", "test")
MANIFEST_VERSION = 2
METHODS = ("seeded_shuffle", "headroom_probe")


class SplitError(ValueError):
    """A split request that cannot be met, or a bad manifest file. The message is one line."""


def default_split_sizes(n_families: int) -> tuple[int, int]:
    """(n_test, n_dev): about 25% test and 20% dev, at least 1 each, leaving train >= 1."""
    if n_families < 3:
        raise SplitError(f"need at least 3 families for train/dev/test splits, got {n_families}")
    n_test = max(1, int(n_families * 0.25 + 0.5))
    n_dev = max(1, int(n_families * 0.20 + 0.5))
    while n_test + n_dev >= n_families:
        if n_test >= n_dev and n_test > 1:
            n_test -= 1
        else:
            n_dev -= 1
    return n_test, n_dev


def make_splits(
    families: Sequence[str],
    *,
    n_test: int,
    n_dev: int,
    seed: int,
    headroom: Collection[str] = (),
) -> dict[str, list[str]]:
    """Assign each distinct family to train, dev or test; lists come back sorted.

    Headroom families (those not in ``families`` are ignored) are shuffled with ``seed`` and
    dealt round-robin test, dev, train, skipping a split that is full; the remaining families
    are shuffled and fill test, then dev, then train. With no headroom (the default) the result
    depends on ``seed`` and the set of family names only.
    """
    fams = sorted(set(families))
    if n_test < 1:
        raise SplitError(f"n_test must be at least 1, got {n_test}")
    if n_dev < 0:
        raise SplitError(f"n_dev must not be negative, got {n_dev}")
    if n_test + n_dev >= len(fams):
        raise SplitError(
            f"n_test + n_dev = {n_test + n_dev} leaves no training family out of {len(fams)}"
        )
    capacity = {"test": n_test, "dev": n_dev, "train": len(fams) - n_test - n_dev}
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    rng = random.Random(seed)

    head_set = set(headroom)
    head = [f for f in fams if f in head_set]
    rng.shuffle(head)
    order = ("test", "dev", "train")
    turn = 0
    for fam in head:
        # Total capacity equals the number of families, so a split with room always exists.
        while len(out[order[turn % 3]]) >= capacity[order[turn % 3]]:
            turn += 1
        out[order[turn % 3]].append(fam)
        turn += 1

    rest = [f for f in fams if f not in head_set]
    rng.shuffle(rest)
    for split in order:
        take = capacity[split] - len(out[split])
        out[split].extend(rest[:take])
        rest = rest[take:]
    return {s: sorted(out[s]) for s in SPLITS}


def make_cv_folds(
    families: Sequence[str], *, k: int, seed: int, headroom: Collection[str] = ()
) -> list[list[str]]:
    """``k`` disjoint groups of test families covering each family once, sizes within 1.

    Headroom families (opt-in; default none) are shuffled and dealt round-robin first, so folds
    hold them evenly; the rest go, shuffled, to whichever fold is smallest.
    """
    fams = sorted(set(families))
    if k < 2:
        raise SplitError(f"cross-validation needs at least 2 folds, got {k}")
    if k > len(fams):
        raise SplitError(f"cannot make {k} folds from {len(fams)} families")
    rng = random.Random(seed)
    folds: list[list[str]] = [[] for _ in range(k)]
    head_set = set(headroom)
    head = [f for f in fams if f in head_set]
    rng.shuffle(head)
    for i, fam in enumerate(head):
        folds[i % k].append(fam)
    rest = [f for f in fams if f not in head_set]
    rng.shuffle(rest)
    for fam in rest:
        smallest = min(range(k), key=lambda i: (len(folds[i]), i))
        folds[smallest].append(fam)
    return [sorted(f) for f in folds]


def probe_cases(case_ids_by_family: Mapping[str, Sequence[str]], *, seed: int) -> list[str]:
    """One probe case per family with at least two cases, chosen from the seed and case ids only.

    A family with a single case gives no probe (it would leave nothing to score). The ids come
    back sorted.
    """
    rng = random.Random(f"probe:{seed}")
    out = []
    for fam in sorted(case_ids_by_family):
        ids = sorted(set(case_ids_by_family[fam]))
        if len(ids) >= 2:
            out.append(ids[rng.randrange(len(ids))])
    return sorted(out)


def split_manifest(
    splits: Mapping[str, Sequence[str]],
    *,
    seed: int,
    sizes: Mapping[str, int] | Sequence[int],
    headroom: Collection[str] = (),
    case_counts: Mapping[str, int],
    method: str = "seeded_shuffle",
    probe_case_ids: Collection[str] = (),
) -> dict[str, Any]:
    """The JSON-ready record of how a split was made (written as ``split_manifest.json``).

    ``sizes`` is what was requested: a mapping such as ``{"test": 10, "dev": 8}`` or the
    ``(n_test, n_dev)`` pair from ``default_split_sizes``. ``method`` is ``seeded_shuffle``
    (seed and family names only), ``headroom_probe`` (headroom read from ``probe_case_ids``
    only, which no score counts) or, for a reused split, whatever the reused manifest said.
    """
    _check_split_families("split_manifest", splits)
    if not isinstance(sizes, Mapping):
        n_test, n_dev = sizes
        sizes = {"test": n_test, "dev": n_dev}
    return {
        "version": MANIFEST_VERSION,
        "seed": seed,
        "sizes": dict(sizes),
        "split_families": {s: sorted(splits[s]) for s in SPLITS},
        "n_families": {s: len(splits[s]) for s in SPLITS},
        "method": method,
        "headroom_families": sorted(headroom),
        "probe_case_ids": sorted(probe_case_ids),
        "case_counts": {s: int(case_counts.get(s, 0)) for s in SPLITS},
    }


def load_split_manifest(path: str | Path) -> dict[str, list[str]]:
    """Read a manifest and return its ``split_families``; SplitError names the file on problems."""
    return read_split_manifest(path)["split_families"]


def read_split_manifest(path: str | Path) -> dict[str, Any]:
    """The checked manifest: ``split_families``, ``method`` and ``probe_case_ids`` (empty for
    manifests written before probes existed). SplitError names the file on problems."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SplitError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SplitError(f"{path}: cannot read ({type(e).__name__})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise SplitError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(obj, dict) or "split_families" not in obj:
        raise SplitError(f"{path}: no split_families object")
    version = obj.get("version", 1)
    if type(version) is not int or not 1 <= version <= MANIFEST_VERSION:
        raise SplitError(f"{path}: manifest version {version!r}; this toolkit reads versions 1 to {MANIFEST_VERSION}")
    if not isinstance(obj.get("method", ""), (str, type(None))):
        raise SplitError(f"{path}: method must be a string, got {obj['method']!r}")
    splits = obj["split_families"]
    _check_split_families(str(path), splits)
    probes = obj.get("probe_case_ids", [])
    if not isinstance(probes, list) or not all(isinstance(c, str) for c in probes):
        raise SplitError(f"{path}: probe_case_ids must be a list of case ids")
    # v1 manifests dealt headroom families read from every case's answers
    method = obj.get("method") or ("headroom_all_cases" if obj.get("headroom_families") else "seeded_shuffle")
    return {"split_families": {s: list(splits[s]) for s in SPLITS}, "method": str(method),
            "probe_case_ids": list(probes)}


def _check_split_families(where: str, splits: Any) -> None:
    if not isinstance(splits, Mapping):
        raise SplitError(f"{where}: split_families must map split names to lists of families")
    keys = set(splits)
    if keys != set(SPLITS):
        raise SplitError(
            f"{where}: split_families must have exactly train, dev and test, got {sorted(keys)}"
        )
    owner: dict[str, str] = {}
    for s in SPLITS:
        fams = splits[s]
        if not isinstance(fams, (list, tuple)) or not all(isinstance(f, str) for f in fams):
            raise SplitError(f"{where}: split_families.{s} must be a list of family names")
        for f in fams:
            if f in owner:
                where_else = "twice" if owner[f] == s else f"in both {owner[f]} and {s}"
                raise SplitError(f"{where}: family {f!r} appears {where_else}")
            owner[f] = s
