"""The thread policy of the commands (``pyg_routing.threads``)."""

import numba
import pytest
import torch

from pyg_routing.threads import THREADS_ENV, apply_threads, choose_threads


def test_free_cores_rule(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert choose_threads(cores=8, load=0.0) == 8
    assert choose_threads(cores=8, load=2.6) == 5          # round(8 - 2.6)
    assert choose_threads(cores=2, load=3.9) == 1          # busier than the cores: one
    assert choose_threads(cores=4, load=-1.0) == 4         # never more than the cores
    assert choose_threads(3, cores=8, load=7.0) == 3       # the command's own choice


def test_environment_override_wins(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert choose_threads(cores=2, load=5.0) == 3
    assert choose_threads(1, cores=2, load=0.0) == 3
    monkeypatch.setenv(THREADS_ENV, " auto ")
    assert choose_threads(cores=4, load=1.0) == 3


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_override_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(ValueError, match=THREADS_ENV):
        choose_threads(cores=2, load=0.0)


@pytest.mark.parametrize("value", [0, -1, 2.5, True])
def test_a_bad_request_is_refused(monkeypatch, value):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    with pytest.raises(ValueError, match="threads must be an integer"):
        choose_threads(value, cores=2, load=0.0)


def test_apply_sets_torch_and_numba(monkeypatch):
    before = torch.get_num_threads(), numba.get_num_threads()
    monkeypatch.setenv(THREADS_ENV, "1")
    try:
        assert apply_threads() == 1
        assert torch.get_num_threads() == 1 and numba.get_num_threads() == 1
    finally:
        torch.set_num_threads(before[0])
        numba.set_num_threads(before[1])
