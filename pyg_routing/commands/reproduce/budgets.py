"""The three scales of ``reproduce`` as data: which shipped recipe a cell starts from,
which overlay and overrides make it fit a scale, and the seeds.

* ``paper``: each cell is its setting's shipped recipe as it is
  (``dact/cvrp100``, ``n2s/pdtsp50``, ``nds/vrptw1000``: the paper's protocol, the
  originals' training, 1 000 test instances, NDS's own test sets) with three
  training seeds, on a GPU.
* ``cpu``: about an hour per table on 2 CPU cores, one seed. A cell starts from the
  recipe of the smaller size it runs at (DACT: 20 customers, PDTSP-21; NDS: 100
  customers, with NDS's own CVRP/VRPTW/PCVRP-100 recipes; N2S: the paper's sizes) and
  the overlay ``cpu/<backbone>`` (CPU-sized batches, horizons and test sets). A DACT
  table's epochs are set by its cell count (:data:`DACT_CPU_EPOCHS`): fewer cells,
  more epochs each; rows are compared within a table, at one budget.
* ``smoke``: every cell at a toy budget (the overlay ``smoke/<backbone>``, 10-20
  customers); it proves the pipeline on 2 CPU cores in minutes, not the claim.

The paper's setting names the column at every scale (``CVRP-100`` at ``cpu`` is
CVRP-20), and the table's caption says so.
"""

from __future__ import annotations

SCALES = ("smoke", "cpu", "paper")

#: training seeds per scale (the paper: means over three independent seeds, Sec. 4.1)
SEEDS = {"smoke": (0,), "cpu": (0,), "paper": (0, 1, 2)}

#: customers per instance at a scale (``None``: the paper's)
SIZES = {"dact": {"smoke": 10, "cpu": 20, "paper": None},
         "n2s": {"smoke": 10, "cpu": None, "paper": None},
         "nds": {"smoke": 20, "cpu": 100, "paper": None}}
#: the size of the recipe a scale starts from (``None``: the paper's size)
RECIPE_SIZES = {"dact": {"smoke": 20, "cpu": 20, "paper": None},
                "n2s": {"smoke": 20, "cpu": None, "paper": None},
                "nds": {"smoke": 100, "cpu": 100, "paper": None}}

#: DACT's training epochs per table at ``cpu`` (an hour or less per table: fewer cells,
#: more epochs each). Set for the dual-aspect encoder of the recipes: an epoch of the
#: ``cpu/dact`` overlay on CVRP-20 takes about 80 s on 2 idle cores (2.7 times the GPS
#: encoder's 30 s, for which the earlier counts 2, 3, 25, 10, 16 were set), a cell's test
#: about 2 min more (2026-11-27).
DACT_CPU_EPOCHS = {"tab2": 1, "tab4": 1, "tab8": 5, "tab9": 4, "tab10": 6}

#: the reference solver's seconds per instance of a comparison, per backbone and scale
#: (NDS's: the setting's own search time, see :func:`reference_seconds`)
REFERENCE_SECONDS = {"dact": {"smoke": 0.05, "cpu": 0.2, "paper": 1.0},
                     "n2s": {"smoke": 0.05, "cpu": 0.5, "paper": 2.0},
                     "nds": {"smoke": 0.05, "cpu": 10.0, "paper": None}}
#: NDS's test seconds per instance by size (paper App. E, NDS's eval configs)
NDS_SECONDS = {100: 5, 500: 60, 1000: 120, 2000: 240}

#: the probes' instance count, reference seconds and Spearman pairs per scale
#: (smoke: the deterministic nearest-neighbour heuristic, so that reruns and shards agree
#: exactly; a time-limited HGS run depends on the machine's load)
PROBE = {
    "smoke": {"instances": "4", "seconds": "0.05", "pairs": "500",
              "solver": "nearest_neighbor"},
    "cpu": {"instances": "200", "seconds": "0.5", "pairs": "100000", "solver": "pyvrp"},
    "paper": {"instances": "1000", "seconds": "1", "pairs": "1000000", "solver": "pyvrp"},
}

#: Tab. 7's X search per scale (``search --benchmark x``, the CVRP-500 recipe's test
#: protocol: 60 s per instance); smoke: the bundled instance; paper: the paper's 84
X_SEARCH = {
    "smoke": "--names X-n101-k25 --data_dir {xdata} --test.steps 2 --test.augment 2 "
             "--test.rollouts 6 --test.remove 4 --test.seconds 5",
    "cpu": "--max_customers 200 --test.seconds 10",
    "paper": "--names paper",
}


def size(scale: str, backbone: str, paper_size: int) -> int:
    """Customers per instance of the paper's ``paper_size`` at ``scale``."""
    shrunk = SIZES[backbone][scale]
    return paper_size if shrunk is None else shrunk


def recipe(backbone: str, problem: str, paper_size: int, scale: str) -> str:
    """The shipped recipe a cell of the paper's ``problem``-``paper_size`` starts from."""
    n = RECIPE_SIZES[backbone][scale] or paper_size
    return f"{backbone}/{problem}{n}"


def options(backbone: str, problem: str, paper_size: int, scale: str,
            table: str) -> list[str]:
    """The cell's recipe options: ``--config`` recipe (and overlay), the size and the
    epochs where the scale changes them."""
    out = ["--config", recipe(backbone, problem, paper_size, scale)]
    if scale != "paper":
        out += ["--config", f"{scale}/{backbone}"]
    n = size(scale, backbone, paper_size)
    if n != (RECIPE_SIZES[backbone][scale] or paper_size):
        out += ["--num_customers", str(n)]
    if backbone == "dact" and scale == "cpu":
        out += ["--train.epochs", str(DACT_CPU_EPOCHS[table])]
    return out


def reference_seconds(backbone: str, scale: str, paper_size: int) -> str:
    """The reference solver's seconds per instance of a comparison cell."""
    seconds = REFERENCE_SECONDS[backbone][scale]
    return f"{seconds if seconds is not None else NDS_SECONDS.get(paper_size, 60):g}"
