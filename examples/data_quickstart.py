"""The README example: instances, a solution as PyG data, a cached dataset, a benchmark.

Run: python examples/data_quickstart.py
"""

from torch_geometric.loader import DataLoader

from pyg_routing.data import CVRPGenerator, RoutingData, RoutingDataset, load_instance


def main(root: str = "data") -> None:
    inst = CVRPGenerator(num_customers=100, seed=0).sample(8)     # batched, on any device
    data = RoutingData.from_routes(inst[0], routes=[list(range(1, 51)), list(range(51, 101))])
    print(data.routes()[1][:5])      # [51, 52, 53, 54, 55]: depot omitted, order kept
    print(data.cum_dist.shape)       # [101] distance from the depot along the route (d_i)
    print(data.route_length[1])      # length of node 1's route (d_L)
    print(float(data.cost()))        # total Euclidean length
    print(bool(data.is_feasible()))  # False: 50 customers exceed the capacity C(100) = 50
    # data.check() would raise InfeasibleSolutionError naming the route and the capacity

    ds = RoutingDataset(root, problem="cvrp", num_customers=20, num_instances=16, seed=1,
                        solver="pyvrp", time_limit=0.1)            # cached reference solutions
    batch = next(iter(DataLoader(ds, batch_size=8)))
    print(batch.cost())              # [8] costs; route ids stay unique across the batch
    x = load_instance("X-n101-k25.vrp", solution="X-n101-k25.sol")
    print(float(x.cost()))           # 27591.0: CVRPLib's BKS with nint distances


if __name__ == "__main__":
    main()
