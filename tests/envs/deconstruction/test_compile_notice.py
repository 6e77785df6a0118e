"""The one-line notice before numba compiles NDS's kernels, and the cheap warm-up of a
search's first job."""

from pyg_routing.envs.deconstruction import _kernels, compile_notice
from pyg_routing.search import DestroyRepairSearch, StepSearch
from pyg_routing.training.search_predictor import warm_up_search


class _Uncached:
    """A kernel never called in this process, with nothing on disk."""

    signatures: list = []
    _cache = type("C", (), {"_cache_file": type("F", (), {"_load_index": lambda self: {}})()})()


def test_the_notice_is_one_line_once_per_process(monkeypatch, capsys):
    monkeypatch.setattr(compile_notice, "_announced", False)
    assert compile_notice.has_disk_cache(_Uncached()) is False
    assert compile_notice.announce_compilation(_Uncached())
    assert not compile_notice.announce_compilation(_Uncached())       # once
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling NDS's numba kernels" in err


def test_no_notice_for_a_cached_or_compiled_kernel(monkeypatch, capsys):
    monkeypatch.setattr(compile_notice, "_announced", False)
    compiled = _Uncached()
    compiled.signatures = ["(int64,)"]
    assert not compile_notice.announce_compilation(compiled)
    unknown = type("K", (), {"signatures": []})()                   # no cache to ask
    assert compile_notice.has_disk_cache(unknown) is None
    assert not compile_notice.announce_compilation(unknown)
    # the real kernels are numba dispatchers whose cache can be asked
    assert compile_notice.has_disk_cache(_kernels.sets_kernel) in (True, False)
    assert capsys.readouterr().err == ""


def test_the_warm_up_search_is_small():
    search = DestroyRepairSearch(augment=8, rollouts=200, recreate_n=3, remove=10)
    warm = warm_up_search(search)
    assert (warm.augment, warm.rollouts, warm.recreate_n, warm.remove) == (1, 8, 3, 10)
    assert warm_up_search(DestroyRepairSearch(rollouts=4)).rollouts == 4
    step = StepSearch(augment=2)
    assert warm_up_search(step) is step
