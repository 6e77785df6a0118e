"""The probes' definitions as text (``pyg-routing probe KIND --help`` shows them, and
every probe result carries its own), with the constants they state: torch-free, so
the command line's help imports no torch. Each probe module re-exports its own as
``DEFINITION``."""

from __future__ import annotations

#: Anisometry (:mod:`pyg_routing.probes.anisometry`)
ANISOMETRY = r"""Anisometry of routes (paper Sec. 3.1, Tab. 1).

For every route ``(x_0, v_1, ..., v_m, x_0)`` with ``m >= 2`` customers, over a whole
dataset of solutions, with edges ``e_0 = |x_0 v_1|, e_1 = |v_1 v_2|, ..., e_m =
|v_m x_0|`` (``m + 1`` edges, the two depot edges included):

* **CV**: coefficient of variation of the edge lengths, ``std(e) / mean(e)``
  (population standard deviation, ``ddof = 0``).
* **max/min**: ``max(e) / min(e)``. Zero-length edges (a customer on the depot or
  on the previous customer) would make this infinite, so the minimum is taken over
  the edges longer than ``1e-9 * mean(e)``; a route with fewer than two such edges
  gets no ratio and is left out of the max/min aggregate only.
* **MAD**: the ordinary least-squares line ``d ≈ a + b i`` through the ``m + 2``
  points ``(0, 0), (1, d_1), ..., (m, d_m), (m + 1, d_L)`` (the paper's ``i = 1..L``
  with the depot at both ends, here numbered from 0, which does not change the
  residuals); MAD is the median of the absolute residuals ``|d_i - a - b i|``
  divided by the route's mean edge ``d_L / (m + 1)``. (The residuals of a
  least-squares fit have mean zero, so this is the median absolute deviation of
  the residuals about zero.)
* **MAD (customers only)**, reported as ``mad_customers`` beside the main one:
  the same fit over the customers ``(1, d_1), ..., (m, d_m)`` only, in units of
  the mean customer-to-customer edge ``(d_m - d_1) / (m - 1)``. The paper's text
  does not say whether the depot visits enter the fit; this variant leaves them out.

Aggregate: the unweighted mean over all routes of the dataset (every route counts
once, whatever its length or instance); medians and the route count are reported
too. A statistic that is undefined for a route (NaN: a route of length 0, or
max/min without two non-zero edges) is left out of that statistic's aggregate.
Edge lengths are Euclidean in the data's ``pos`` units; all three statistics are
scale-free, so normalized and raw coordinates give the same numbers.

Everything is computed with scatter ops and one segmented sort over a PyG
``Batch``; there is no Python loop over routes or instances.
"""

#: Number of equal-width angle bins on [-pi, pi).
NUM_BINS = 16
#: Within-route positions probed (1-based; k = 1 is the first customer).
POSITIONS = tuple(range(2, 16))
#: Positions with fewer pooled customers than this are skipped (reported as None).
MIN_SAMPLES = 10 * NUM_BINS

#: Hierarchy entropy (:mod:`pyg_routing.probes.entropy`)
ENTROPY = f"""\
Hierarchy entropy (our fixed definition of the paper's vague one): for each
within-route position k in {POSITIONS[0]}..{POSITIONS[-1]} (1-based, depot = 0), take
the customers at position k of every route of every instance of the dataset
(pooled over instances: one instance has only ~10 routes, too few for a
histogram); bin their depot-relative angles theta = atan2(y - y0, x - x0) into
B = {NUM_BINS} equal bins on [-pi, pi); the normalized entropy is the plug-in
(maximum-likelihood) Shannon entropy of the bin frequencies divided by log B,
in [0, 1] (0: all in one bin, 1: uniform). A position with fewer than
{MIN_SAMPLES} customers (10 B; the plug-in bias is then < ~0.02) is skipped and
reported as null. Reported: the per-k values and counts, their mean over the
kept k (the paper's 0.992) and their minimum (the paper's 0.953)."""


#: Spearman probes D1-D3 (:mod:`pyg_routing.probes.spearman`)
SPEARMAN = """\
Spearman probes (our fixed reading of the paper's Tab. 3). Nodes are customers
(depots and unvisited customers are never sampled). With a seeded generator we
draw num_pairs same-route pairs (i uniform over customers of routes with >= 2
customers, j uniform over the other customers of i's route) and num_pairs
cross-route pairs (i uniform over customers whose instance has another route,
j uniform over the customers of that instance on other routes); sampling is with
replacement (no cross-route pairs when every instance has a single route: D3
is then null). For every encoding the pair dissimilarity is ||PE(i) - PE(j)||_2 for
a per-node PE [N, D], or the entry [i, j] of a pairwise [N, N] output (or of
the instance's block of a dense [B, n_max, n_max] one).
  D1 = Spearman(dissimilarity, |d_i - d_j|) over the same-route pairs
       (d = cumulative travel distance from the depot along the route).
  D2 = Spearman(dissimilarity, min(|d_i - d_j|, d_L - |d_i - d_j|)) over the
       same-route pairs (cyclic arc distance, d_L = route length).
  D3 = Spearman(dissimilarity, 1[route(i) != route(j)]) over both pair sets
       (balanced: half same-route, half cross-route, all within one instance).
       This is the pairwise form of the paper's "ratio of mean inter-route to
       intra-route distance": it is > 0 exactly when cross-route pairs rank
       farther apart than same-route pairs (rank-biserial correlation, at most
       sqrt(3)/2 = 0.866 for a perfect separation of the balanced sets).
  D3_ratio = mean dissimilarity of the cross-route pairs / mean over the
       same-route pairs (the paper's ratio itself, reported alongside).
A constant dissimilarity (e.g. no encoding) gives null."""
