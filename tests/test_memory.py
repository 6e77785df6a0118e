"""The memory policy of the commands (``pyg_routing.memory``)."""

import subprocess
import sys

import pytest

import pyg_routing.memory as memory
from pyg_routing.cli import main
from pyg_routing.memory import MALLOC_ENV, apply_memory_policy, chosen_policy, keep_freed_memory


@pytest.fixture
def clean_env(monkeypatch):
    for name in (MALLOC_ENV, "GLIBC_TUNABLES", *memory.GLIBC_SETTINGS):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_keep_is_the_default_and_glibc_opts_out(clean_env):
    assert chosen_policy() == "keep"
    clean_env.setenv(MALLOC_ENV, " KEEP ")
    assert chosen_policy() == "keep"
    clean_env.setenv(MALLOC_ENV, "glibc")
    assert chosen_policy() == "glibc"


@pytest.mark.parametrize("name, value", [("MALLOC_TRIM_THRESHOLD_", "1000000"),
                                         ("MALLOC_MMAP_THRESHOLD_", "65536"),
                                         ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1")])
def test_glibcs_own_settings_win(clean_env, name, value):
    clean_env.setenv(name, value)
    assert chosen_policy() == "glibc"
    assert apply_memory_policy() is False


def test_an_unrelated_tunable_does_not_switch_the_policy_off(clean_env):
    clean_env.setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
    assert chosen_policy() == "keep"


@pytest.mark.parametrize("value", ["yes", "0", "malloc"])
def test_a_bad_policy_is_refused_by_name(clean_env, value):
    clean_env.setenv(MALLOC_ENV, value)
    with pytest.raises(ValueError, match=f"{MALLOC_ENV}='{value}'"):
        chosen_policy()


@pytest.mark.parametrize("kwargs", [{"trim_threshold": 0}, {"mmap_threshold": -5},
                                    {"trim_threshold": 2.5}, {"mmap_threshold": True}])
def test_bad_thresholds_are_refused(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{name} must be a positive number of bytes"):
        keep_freed_memory(**kwargs)


def test_off_glibc_nothing_is_set(monkeypatch):
    monkeypatch.setattr(memory, "is_glibc", lambda: False)
    monkeypatch.setattr(memory.ctypes, "CDLL", None)   # would fail if it were called
    assert keep_freed_memory() is False


def test_the_commands_apply_the_policy_unless_told_not_to(clean_env, tmp_path, capsys):
    calls = []
    clean_env.setattr(memory, "keep_freed_memory", lambda: calls.append(1) or True)
    assert main(["info", str(tmp_path)]) == 2             # an empty folder: refused later
    assert calls == [1]
    clean_env.setenv(MALLOC_ENV, "glibc")
    assert main(["info", str(tmp_path)]) == 2
    assert calls == [1]
    clean_env.setenv(MALLOC_ENV, "lots")
    assert main(["info", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {MALLOC_ENV}='lots'" in err and "holds no dataset" not in err.splitlines()[-1]


# A child process runs "steps" that allocate and free a few temporaries of 2-8 MB
# (26 MB in all). It first fixes glibc's thresholds at their 128 kB starting values, so
# that every step's temporaries are given back and faulted in afresh whatever the
# heap's history (glibc's adjusted thresholds depend on it); keep_freed_memory must
# then change that: the pages stay and serve the next step.
_CHILD = """
import ctypes, resource, sys, torch
from pyg_routing.memory import keep_freed_memory
torch.set_num_threads(1)
libc = ctypes.CDLL(None)
assert libc.mallopt(-3, 128 * 1024) and libc.mallopt(-1, 128 * 1024)
if sys.argv[1] == "keep":
    assert keep_freed_memory()
faults = []
for _ in range(12):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    temporaries = [torch.empty(n * 2**18).fill_(1.0) for n in (8, 4, 8, 6, 2)]
    del temporaries
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(*faults[4:])
"""


@pytest.mark.skipif(not memory.is_glibc(), reason="the thresholds are glibc's")
def test_freed_memory_serves_the_next_step_without_faults():
    def faults(mode: str) -> list[int]:
        out = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True,
                             text=True, check=True).stdout
        return [int(v) for v in out.split()]

    given_back, kept = faults("glibc"), faults("keep")
    assert min(given_back) > 1000, given_back   # every step faulted its temporaries afresh
    # the same pages, reused: most steps fault none; now and then the heap still grows
    # once by a temporary's size (1 536 pages), where aligned blocks did not fit a hole
    assert sorted(kept)[len(kept) // 2] < 10, kept
    assert sum(kept) < sum(given_back) / 10, (kept, given_back)


# ---------------------------------------------------------------- available memory
def _proc(tmp_path, monkeypatch, groups, available_kb=8 * 2**20):
    """Fake /proc/meminfo (``MemAvailable``), /proc/self/cgroup and a cgroup tree."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available_kb} kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(groups)
    root = tmp_path / "fs"
    root.mkdir()
    monkeypatch.setattr(memory, "MEMINFO", str(meminfo))
    monkeypatch.setattr(memory, "PROC_CGROUP", str(cgroup))
    monkeypatch.setattr(memory, "CGROUP_ROOT", str(root))
    return root


def _write(folder, **files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text)


def test_available_memory_is_meminfos_without_a_group_limit(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "0::/job\n")
    _write(root / "job", memory_max="max\n", memory_current="123\n")
    assert memory.available_memory() == 8 * 2**30


def test_a_v2_group_limit_caps_available_memory(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "0::/job/step\n")
    _write(root / "job" / "step", memory_max=f"{3 * 2**30}\n", memory_current=f"{2**30}\n")
    assert memory.available_memory() == 2 * 2**30


def test_a_v1_memory_group_caps_available_memory(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n")
    _write(root / "memory" / "docker" / "abc", memory_limit_in_bytes=f"{2**30}\n",
           memory_usage_in_bytes=f"{2**28}\n")
    assert memory.available_memory() == 2**30 - 2**28


def test_a_container_sees_its_group_at_the_mounts_root(tmp_path, monkeypatch):
    # inside a cgroup namespace the group's own path is not under the mount
    root = _proc(tmp_path, monkeypatch, "4:memory:/docker/abc\n")
    _write(root / "memory", memory_limit_in_bytes=f"{2**31}\n", memory_usage_in_bytes="0\n")
    assert memory.available_memory() == 2**31


def test_v1s_no_limit_and_unreadable_files_leave_meminfo(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "4:memory:/\n", available_kb=1024)
    _write(root / "memory", memory_limit_in_bytes="9223372036854771712\n",
           memory_usage_in_bytes="5\n")
    assert memory.available_memory() == 2**20
    monkeypatch.setattr(memory, "MEMINFO", str(tmp_path / "missing"))
    assert memory.available_memory() is None
    _write(root / "memory", memory_limit_in_bytes="garbage\n")
    assert memory.available_memory() is None


def test_a_parents_limit_caps_a_group_without_its_own(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "0::/job/step\n")
    _write(root / "job", memory_max=f"{5 * 2**30}\n", memory_current=f"{2**30}\n")
    _write(root / "job" / "step", memory_max="max\n", memory_current=f"{2**29}\n")
    assert memory.available_memory() == 4 * 2**30
    _write(root / "job" / "step", memory_max=f"{2**31}\n")     # the tighter of the two
    assert memory.available_memory() == 2**31 - 2**29


def test_malformed_group_lines_are_skipped(tmp_path, monkeypatch):
    root = _proc(tmp_path, monkeypatch, "garbage\n4:memory:/g\n")
    _write(root / "memory" / "g", memory_limit_in_bytes=f"{2**30}\n",
           memory_usage_in_bytes="0\n")
    assert memory.available_memory() == 2**30
