#!/usr/bin/env bash
# The checks a session runs when it is lent a CUDA machine, in the order they matter
# (results: docs/experiments.md, "On a GPU"):
#   1. the CUDA and mixed-precision tests of every backbone (pytest -k cuda);
#   2. a short training and search of each backbone at a recipe's size on the GPU, under
#      mixed precision (full-size networks, a budget of seconds: it proves the path, not
#      the quality);
#   3. the floor benchmarks on CUDA, fp32 and half precision, and DACT's and N2S's
#      compiled search.
# Run from the repository root: `bash benchmarks/cuda_checks.sh [DIR [PARTS]]`: logs into
# DIR (default $OUT or /tmp/cuda_checks); PARTS picks among tests,train,bench (default
# all three). Steps run under time limits; a failing step is reported and the next one
# runs.
set -u
out=${1:-${OUT:-/tmp/cuda_checks}}
parts=,${2:-tests,train,bench},
want() { [[ $parts == *,$1,* ]]; }
mkdir -p "$out"
work=$(mktemp -d)
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
pyg() { $py -c 'import sys; from pyg_routing.cli import main; sys.exit(main(sys.argv[1:]))' "$@"; }

# step NAME LOG SECONDS COMMAND...: run it under a limit, its output appended to LOG
step() {
    local name=$1 log=$2 limit=$3 t0=$SECONDS rc
    shift 3
    echo "=== $name" >>"$log"
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    echo "=== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$log"
}
# cli TAG SECONDS COMMAND...: a CLI run whose --json goes to $work/TAG.json
cli() {
    local tag=$1 limit=$2
    shift 2
    step "$tag: $*" "$out/train_search.log" "$limit" \
        bash -c 'out=$1; shift; "$@" >"$out"' _ "$work/$tag.json" "$@"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$py -c 'import torch, torch_geometric, lightning, numba, numpy
print("torch", torch.__version__, "cuda", torch.version.cuda, "| pyg", torch_geometric.__version__,
      "| lightning", lightning.__version__, "| numba", numba.__version__, "| numpy",
      numpy.__version__, "|", torch.cuda.get_device_name())'
export -f pyg
export py

if want tests || want train; then
# 0. numba's kernels compiled and cached once (a fresh machine's first search)
cli first_search 300 pyg search --num_customers 20 --destroy sisr --test.instances 1 \
    --test.steps 2 --reference.solver none --json --no_progress --out "$work/s0"

fi

# 1. the CUDA and AMP tests
want tests && step "pytest -k cuda" "$out/tests.log" 300 $py -m pytest -q -p no:cacheprovider -k cuda \
    --continue-on-collection-errors -rfEs \
    -n 8 tests
want tests && tail -n 15 "$out/tests.log"

# 2. a short training and search of each backbone on the GPU
if want train; then
train=(--trainer.accelerator gpu --trainer.devices 1 --json --no_progress)
run=(--accelerator gpu --json --no_progress --reference.solver none)
cli dact_train 150 pyg train --config dact/cvrp20 --train.epochs 1 --train.batches_per_epoch 2 \
    --validate.instances 200 --validate.steps 200 --trainer.precision bf16-mixed \
    --out "$work/dact" "${train[@]}"
cli n2s_train 150 pyg train --config n2s/pdtsp20 --train.epochs 1 --train.batches_per_epoch 2 \
    --validate.instances 200 --validate.steps 200 --trainer.precision 16-mixed \
    --out "$work/n2s" "${train[@]}"
cli nds_train 200 pyg train --config nds/cvrp100 --train.epochs 1 --train.batches_per_epoch 1 \
    --validate.instances 50 --validate.steps 5 --out "$work/nds" "${train[@]}"
for b in dact n2s; do
    ckpt=$(find "$work/$b" -name last.ckpt | head -n 1)
    [ -n "$ckpt" ] && cli "${b}_evaluate" 120 pyg evaluate --checkpoint "$ckpt" \
        --test.instances 1000 --test.steps 500 --test.augment 8 "${run[@]}"
done
ckpt=$(find "$work/nds" -name last.ckpt | head -n 1)
[ -n "$ckpt" ] && cli nds_search 120 pyg search --checkpoint "$ckpt" --destroy policy \
    --test.instances 8 --test.seconds 3 --out "$work/s1" "${run[@]}"
$py - "$work" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        d = json.loads(f.read_text())
    except ValueError:
        print(f"{f.stem}: no JSON"); continue
    if "best_val_cost" in d:
        m = d["metrics"]
        print(f"{f.stem}: {d['global_step']} steps in {d['seconds']:.1f} s, val/cost "
              f"{m.get('val/cost')}, val/init_cost {m.get('val/init_cost')}, "
              f"train/loss {m.get('train/loss')}")
    elif "mean" in d:
        print(f"{f.stem}: mean objective {d['mean']['objective']:.4f}, iterations "
              f"{d['mean']['iterations']:.0f}, {d['mean']['seconds']:.2f} s per instance")
    else:
        print(f"{f.stem}: {d['device']}, {d['instances']} instances, cost "
              f"{d['initial_cost']:.4f} -> {d['cost']:.4f} in {d['seconds']:.1f} s")
PY
fi

# 3. the floor benchmarks on CUDA
want bench || { rm -rf "$work"; exit 0; }
log=$out/bench.log
cd benchmarks || exit 1
for p in 32 bf16; do
    step "bench_dact CVRP-100 b512 --precision $p" "$log" 90 \
        $py bench_dact.py --device cuda --precision $p --train
    step "bench_n2s PDP-101 b64 --precision $p" "$log" 90 \
        $py bench_n2s.py --device cuda --customers 100 --precision $p --train
done
# the search networks under torch.compile (Triton): fewer, fused kernel launches
step "bench_dact CVRP-100 b512 --compiled" "$log" 180 $py bench_dact.py --device cuda --compiled
step "bench_n2s PDP-101 b64 --compiled" "$log" 180 $py bench_n2s.py --device cuda --compiled
for p in 32 16; do
    step "bench_nds CVRP-500/1000 --precision $p" "$log" 120 \
        $py bench_nds.py --device cuda --precision $p
done
grep -E '^(===|ours|compiled|floor|[0-9]+ cores|DACT|N2S|NDS)' "$log"
rm -rf "$work"
