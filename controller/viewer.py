"""The trace viewer's public entry points (a DESIGN.md contract: ``controller.viewer.read_page_data``).

The page is built in ``controller/report/viewer.py``; this module only names it for users and checks."""
from controller.report.viewer import read_page_data, write_viewer

__all__ = ["read_page_data", "write_viewer"]
