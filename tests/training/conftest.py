"""What every training test module shares: Lightning's loader and accelerator notices
silenced (the tiny fits run on CPU with in-process loaders on purpose)."""

import warnings

import pytest


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*does not have many workers.*")
        warnings.filterwarnings("ignore", ".*GPU available.*")
        yield
