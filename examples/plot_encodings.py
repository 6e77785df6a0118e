"""Plot a CVRP solution, IPE and XPE channels, and PE-distance heatmaps.

Saves into OUT_DIR: ``solution.png``, ``ipe_channel.png``, ``xpe_channel.png``,
``distance_ipe_xpe.png`` and ``distance_sin_index.png`` (the SIN sinusoid of the
within-route index, the index baseline), plus ``distances.png`` with both heatmaps
side by side.

Run: python examples/plot_encodings.py OUT_DIR [--solver pyvrp|nearest_neighbor]
"""

from __future__ import annotations

import argparse
import os

from matplotlib.figure import Figure

from pyg_routing.data import CVRPGenerator
from pyg_routing.data.solvers import solve_instances
from pyg_routing.functional import sinusoidal_pe
from pyg_routing.functional.route_pe import ipe, ipexpe, xpe
from pyg_routing.viz import plot_encoding, plot_pe_distance, plot_solution


def main(out_dir: str, solver: str = "pyvrp", num_customers: int = 50, seed: int = 0,
         time_limit: float = 1.0, dim: int = 64) -> list[str]:
    """Solve one seeded CVRP instance and save the plots; returns the file paths."""
    os.makedirs(out_dir, exist_ok=True)
    inst = CVRPGenerator(num_customers, seed=seed).sample(1)[0]
    data = solve_instances([inst], solver=solver, time_limit=time_limit, num_workers=1,
                           progress=False)[0]
    # IPE with the paper's printed (geometric) frequencies: smooth in d_i / d_L.
    ipe_pe = ipe(data.cum_dist, data.route_length, dim, "invariant", frequencies="geometric",
                 route_pos=data.route_pos)
    xpe_pe = xpe(data.depot_angle, num_bands=4, depot_mask=data.depot_mask)
    both = ipexpe(data.cum_dist, data.route_length, data.depot_angle, dim, 4, "invariant",
                  frequencies="geometric", route_pos=data.route_pos, depot_mask=data.depot_mask)
    sin = sinusoidal_pe(data.route_pos.clamp(min=0), dim)

    paths = []

    def save(ax, name: str) -> None:
        path = os.path.join(out_dir, name)
        ax.figure.savefig(path, dpi=120)
        paths.append(path)

    save(plot_solution(data, arrows=True), "solution.png")
    save(plot_encoding(data, ipe_pe, channel=1, title="IPE channel 1 (geometric frequencies)"),
         "ipe_channel.png")
    save(plot_encoding(data, xpe_pe, channel=0, title="XPE channel 0: sin(theta)"),
         "xpe_channel.png")
    save(plot_pe_distance(data, both, title="IPE + XPE distance"), "distance_ipe_xpe.png")
    save(plot_pe_distance(data, sin, title="SIN (route index) distance"),
         "distance_sin_index.png")
    fig = Figure(figsize=(11, 5), layout="constrained")
    left, right = fig.subplots(1, 2)
    plot_pe_distance(data, both, ax=left, title="IPE + XPE")
    plot_pe_distance(data, sin, ax=right, title="SIN (route index)")
    save(left, "distances.png")
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="folder for the PNG files")
    parser.add_argument("--solver", default="pyvrp", help="pyvrp or nearest_neighbor")
    parser.add_argument("--num-customers", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=1.0)
    args = parser.parse_args()
    for p in main(args.out_dir, args.solver, args.num_customers, args.seed, args.time_limit):
        print(p)
