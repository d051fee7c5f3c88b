"""The fast lane (issue 32, item 2): ``python -m pytest -m "not slow"``.

The README's full command (``python -m pytest``) runs everything: the unit tests, the statistical
tests and every chapter under nbval. The fast lane leaves out what is marked ``slow``: the
statistical tests that run long chains (Geweke, mixing), the tests that start fresh Python
processes or a browser, and every notebook (nbval re-executes a chapter: minutes each). Notebook
items are marked here, so that no chapter needs a marker of its own; the unit tests carry
``@pytest.mark.slow`` (or a module-level ``pytestmark``) where they take more than a few seconds.
"""
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.suffix == ".ipynb":        # an nbval cell of a chapter or of intro.ipynb
            item.add_marker(pytest.mark.slow)
