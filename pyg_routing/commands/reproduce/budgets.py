"""The three scales of ``reproduce`` as data: each backbone's training and test options
per scale, the sizes a scale shrinks the paper's settings to, and the seeds.

* ``smoke``: every cell at a toy budget (10-20 customers, one batch of a few
  instances, 4 test instances, a few steps, reference solver 0.05 s). It proves the
  pipeline on 2 CPU cores in minutes, not the claim.
* ``cpu``: about an hour per table on 2 CPU cores, one seed. DACT's tables run at 20
  customers (PDTSP: 20, PDTSP-21): Tab. 2 alone has 42 cells, and DACT at 100 customers
  trains for hours per cell on a CPU. A DACT table's epochs are set by its cell count
  (:data:`DACT_CPU_EPOCHS`): a CVRP-20 cell of ``compare``'s CPU-sized PPO batches (64
  instances, 40 steps, 5 batches per epoch, validation included) trained 24 s per epoch
  and tested 256 instances x 500 steps in 19 s on 2 cores (2026-11-25), so Tab. 8's 5
  cells get 25 epochs and Tab. 2's 42 cells (VRPTW and PDTSP are slower) 2; rows are
  compared within a table, at one budget. Tab. 4 keeps PDTSP's three sizes, whose growth is
  its claim, at a small budget; the NDS tables run 100 customers (the smallest size
  with NDS's capacities that is still a many-route instance) for 10 s per instance.
* ``paper``: the paper's budget (App. ``tab:hyperparams``; DACT's and N2S's published
  PPO settings, NDS's 2 000 epochs and 60/120/240 s per instance), three training seeds
  for the Layer-1 tables, the paper's test-set sizes, on a GPU.

The sizes of a scale apply to every problem of a table; the paper's setting names the
column either way (``CVRP-100`` at ``smoke`` is CVRP-10), and the table's caption says so.
"""

from __future__ import annotations

SCALES = ("smoke", "cpu", "paper")

#: training seeds per scale (the paper: means over three independent seeds, Layer 1)
SEEDS = {"smoke": (0,), "cpu": (0,), "paper": (0, 1, 2)}
#: NDS's budget allows one seed at the paper's scale (2 000 epochs per model)
NDS_SEEDS = {"smoke": (0,), "cpu": (0,), "paper": (0,)}

#: customers per instance at a scale (``None``: the paper's)
DACT_SIZE = {"smoke": 10, "cpu": 20, "paper": None}
N2S_SIZE = {"smoke": 10, "cpu": None, "paper": None}
NDS_SIZE = {"smoke": 20, "cpu": 100, "paper": None}

#: ``compare``'s training options per backbone and scale (the test options are apart,
#: as ``evaluate`` and ``search`` spell them differently)
TRAIN: dict[str, dict[str, str]] = {
    "dact": {
        "smoke": "--epochs 1 --dim 16 --heads 2 --layers 1 --pe-dim 8 --batch-size 4 "
                 "--t-train 4 --n-step 2 --val-steps 2 --batches-per-epoch 1 --val-size 4",
        # the epochs come from DACT_CPU_EPOCHS (per table: see train_options)
        "cpu": "--batch-size 64 --t-train 40 --batches-per-epoch 5 --val-size 64 "
               "--val-steps 100",
        # the README's Tab. 2 line: DACT's published PPO budget
        "paper": "--epochs 200 --batch-size 512 --t-train 200 --batches-per-epoch 20 "
                 "--val-size 256 --val-steps 200 --dim 64 --layers 3",
    },
    "n2s": {
        "smoke": "--epochs 1 --dim 16 --heads 2 --layers 1 --pe-dim 8 --batch-size 4 "
                 "--t-train 4 --n-step 2 --val-steps 2 --batches-per-epoch 1 --val-size 4",
        "cpu": "--epochs 3 --batch-size 32 --t-train 20 --batches-per-epoch 4 "
               "--val-size 32 --val-steps 50",
        "paper": "--epochs 200 --batch-size 600 --t-train 250 --batches-per-epoch 20 "
                 "--val-size 256",
    },
    "nds": {
        "smoke": "--layers 2 --dim 16 --heads 2 --pe-dim 8 --num-bands 2 --batch-size 3 "
                 "--rollouts 6 --remove 4 --warmup-steps 1 --iterations 2 --val-steps 1 "
                 "--val-rollouts 4 --val-augment 2 --batches-per-epoch 1 --val-size 2 "
                 "--epochs 1",
        "cpu": "--epochs 3 --batches-per-epoch 4 --val-size 8",
        "paper": "--epochs 2000 --batches-per-epoch 24",
    },
}

#: the test search and reference per backbone and scale, by ``compare``'s option names
#: (``{seconds}``/``{instances}``: the NDS setting's own, see :func:`nds_test`)
TEST: dict[str, dict[str, dict[str, str]]] = {
    "dact": {
        "smoke": {"instances": "4", "steps": "5", "time-limit": "0.05"},
        "cpu": {"instances": "256", "steps": "500", "time-limit": "0.2"},
        "paper": {"instances": "1000", "steps": "1000", "augment": "8", "time-limit": "1"},
    },
    "n2s": {
        "smoke": {"instances": "4", "steps": "5", "time-limit": "0.05"},
        "cpu": {"instances": "32", "steps": "200", "time-limit": "0.5"},
        "paper": {"instances": "1000", "steps": "3000", "augment": "8", "time-limit": "2"},
    },
    "nds": {
        "smoke": {"instances": "4", "steps": "5", "augment": "2", "search-rollouts": "6",
                  "time-limit": "0.05"},
        "cpu": {"instances": "8", "steps": "1000000", "search-seconds": "10",
                "time-limit": "10"},
        # time-bound (NDS's protocol): the step cap is never reached
        "paper": {"instances": "{instances}", "steps": "1000000", "augment": "8",
                  "search-seconds": "{seconds}", "time-limit": "{seconds}"},
    },
}

#: NDS's test sets (Tab. 5): seconds per instance by size, instances by problem and size
NDS_SECONDS = {500: 60, 1000: 120, 2000: 240}
NDS_INSTANCES = {"cvrp": {500: 128, 1000: 100, 2000: 100}}
NDS_DEFAULT_INSTANCES = 250          # VRPTW and PCVRP, every size

#: the probes' instance count, reference seconds and Spearman pairs per scale
#: (smoke: the deterministic nearest-neighbour heuristic, so that reruns and shards agree
#: exactly; a time-limited HGS run depends on the machine's load)
PROBE = {
    "smoke": {"instances": "4", "time-limit": "0.05", "pairs": "500",
              "solver": "nearest_neighbor"},
    "cpu": {"instances": "200", "time-limit": "0.5", "pairs": "100000", "solver": "pyvrp"},
    "paper": {"instances": "1000", "time-limit": "1", "pairs": "1000000", "solver": "pyvrp"},
}

#: Tab. 7's X search per scale (``search --benchmark x``); smoke: the bundled instance
X_SEARCH = {
    "smoke": "--names X-n101-k25 --data-dir {xdata} --iterations 2 --augment 2 "
             "--rollouts 6 --remove 4 --time-limit 5",
    "cpu": "--max-customers 200 --time-limit 10",
    "paper": "--time-limit 60",
}


#: DACT's training epochs per table at ``cpu`` (about an hour per table: fewer cells,
#: more epochs each)
DACT_CPU_EPOCHS = {"tab2": 2, "tab8": 25, "tab9": 10, "tab10": 16}


#: DACT's ``--dummy_rate`` (depot copies ceil(N (1 + rate)) - N) by CVRP size, as its
#: README trains them; ``--scale paper`` passes it as ``--depot-rate`` on CVRP
DACT_DEPOT_RATE = {20: 0.5, 50: 0.4, 100: 0.2}


def train_options(backbone: str, scale: str, table: str, problem: str = "",
                  num_customers: int = 0) -> str:
    """``compare``'s training options of ``backbone`` at ``scale`` in ``table`` for
    ``problem`` with ``num_customers``."""
    options = TRAIN[backbone][scale]
    if backbone == "dact" and scale == "cpu":
        options = f"--epochs {DACT_CPU_EPOCHS[table]} {options}"
    if backbone == "dact" and scale == "paper" and problem == "cvrp" \
            and num_customers in DACT_DEPOT_RATE:
        options += f" --depot-rate {DACT_DEPOT_RATE[num_customers]}"
    return options


def nds_test(scale: str, problem: str, paper_size: int) -> dict[str, str]:
    """NDS's test options at ``scale`` for the paper's setting ``problem``-``paper_size``."""
    seconds = str(NDS_SECONDS.get(paper_size, 60))
    instances = str(NDS_INSTANCES.get(problem, {}).get(paper_size, NDS_DEFAULT_INSTANCES))
    return {k: v.format(seconds=seconds, instances=instances)
            for k, v in TEST["nds"][scale].items()}


def size(scale: str, backbone: str, paper_size: int) -> int:
    """Customers per instance of the paper's ``paper_size`` at ``scale``."""
    shrunk = {"dact": DACT_SIZE, "n2s": N2S_SIZE, "nds": NDS_SIZE}[backbone][scale]
    return paper_size if shrunk is None else shrunk
