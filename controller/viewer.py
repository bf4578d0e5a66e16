"""The trace viewer's public entry points (a DESIGN.md contract: ``controller.viewer.read_page_data``).

The page is built in ``controller/report/viewer.py``; this module only names it for users and checks."""
from controller.report.viewer import read_data_file, read_page_data, write_page, write_viewer

__all__ = ["read_data_file", "read_page_data", "write_page", "write_viewer"]
