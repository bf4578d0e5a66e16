"""The task library: case records, loading and validation, table helpers, family-disjoint splits.

``cases`` imports nothing else of the project. Two case sets ship (``cases.sets``): the Foofah
benchmark in ``cases/foofah/`` (the default, files unchanged) and the project's generated library
in ``cases/data/``, written by ``python -m cases.generate`` from the seeded generators in
``cases.generators``.
"""
from cases.case import NOT_AVAILABLE, Case, Table
from cases.loader import CaseError, family_from_filename, load_cases
from cases.sets import CASE_SETS, DEFAULT_CASE_SET, resolve_case_set
from cases.splits import (
    SplitError,
    default_split_sizes,
    load_split_manifest,
    make_cv_folds,
    make_splits,
    probe_cases,
    read_split_manifest,
    split_manifest,
)
from cases.tables import cell_diff, is_table, render_table, table_shape, tables_equal

__all__ = [
    "CASE_SETS",
    "DEFAULT_CASE_SET",
    "NOT_AVAILABLE",
    "Case",
    "CaseError",
    "SplitError",
    "Table",
    "cell_diff",
    "default_split_sizes",
    "probe_cases",
    "read_split_manifest",
    "family_from_filename",
    "is_table",
    "load_cases",
    "load_split_manifest",
    "make_cv_folds",
    "make_splits",
    "render_table",
    "resolve_case_set",
    "split_manifest",
    "table_shape",
    "tables_equal",
]
