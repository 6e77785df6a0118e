"""Reproducible, seeded batches of generated routing instances for Lightning.

Every training batch is a whole batch of instances drawn by
``make_generator(problem, num_customers, seed=base_seed + k).sample(batch_size)``
where ``k = epoch * batches_per_epoch + i`` is the GLOBAL batch index: the data
depend only on ``(base_seed, epoch, i)``, never on RNG history. The epoch reaches
the sampler through ``set_epoch``, which Lightning's fit loop calls at every epoch
start.

Resuming: a plain ``DataLoader`` cannot tell where a restored fit loop goes on.
Mid-epoch it restarts its epoch (batch ``i`` would get item ``epoch * n``), and
from an end-of-epoch ``ModelCheckpoint`` Lightning serves the next epoch from an
iterator made before the epoch counter moved on. So every item carries its
``generation_key`` ``k``, and :meth:`RoutingDataModule.on_before_batch_transfer`
(called with Lightning's final epoch and batch index) swaps in the item the
sampler gives batch ``i`` of that epoch (``epoch * n + i``; this rank's share under
DDP) whenever they differ: a resumed run sees exactly the batches an uninterrupted
run sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import lightning as L
from torch.utils.data import DataLoader, Dataset, Sampler, SequentialSampler

from pyg_routing.data.generators import make_generator
from pyg_routing.data.instances import RoutingInstances


def _identity(batch: RoutingInstances) -> RoutingInstances:
    return batch


class GeneratedBatches(Dataset):
    """Item ``k`` = ``batch_size`` instances generated with seed ``base_seed + k``
    (its attribute ``generation_key`` is ``k``).

    Args:
        problem: ``tsp``, ``cvrp``, ``vrptw`` ... (see ``make_generator``).
        num_customers: customers per instance (``N = num_customers + 1`` nodes).
        batch_size: instances per item.
        base_seed: seed of item 0.
        length: nominal length (the sampler may index beyond it).
        generator_kwargs: extra arguments of ``make_generator`` (e.g. ``distribution``).
    """

    def __init__(self, problem: str, num_customers: int, batch_size: int, base_seed: int,
                 length: int, **generator_kwargs: Any) -> None:
        self.problem, self.num_customers, self.batch_size = problem, num_customers, batch_size
        self.base_seed, self.length, self.generator_kwargs = base_seed, length, generator_kwargs

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, k: int) -> RoutingInstances:
        gen = make_generator(self.problem, self.num_customers, seed=self.base_seed + int(k),
                             **self.generator_kwargs)
        batch = gen.sample(self.batch_size)
        batch.generation_key = int(k)       # read by RoutingDataModule on resume
        return batch


class EpochBatchSampler(Sampler[int]):
    """Yields the global batch indices ``epoch * num_batches + (0 .. num_batches-1)``.

    ``epoch_fn`` (e.g. the trainer's ``current_epoch``), when given and not
    returning ``None``, is read at the start of every pass and wins over
    :meth:`set_epoch`: Lightning 2.6 creates the first iterator of a ``fit`` before
    calling ``set_epoch``, so a run resumed at epoch 1 would replay epoch 0's data.
    """

    def __init__(self, num_batches: int, epoch_fn: Callable[[], int | None] | None = None) -> None:
        self.num_batches = int(num_batches)
        self.epoch = 0
        self.epoch_fn = epoch_fn

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        epoch = None if self.epoch_fn is None else self.epoch_fn()
        if epoch is not None:
            self.epoch = int(epoch)
        start = self.epoch * self.num_batches
        return iter(range(start, start + self.num_batches))

    def __len__(self) -> int:
        return self.num_batches


class RoutingDataModule(L.LightningDataModule):
    """Seeded generated instances: training batches differ per epoch, the
    validation set is fixed.

    Args:
        problem: routing problem name.
        num_customers: customers per instance.
        batch_size: training instances per batch (DACT: 512, Ma et al. 2021).
        batches_per_epoch: training batches per epoch.
        val_size: validation instances (split in batches of ``val_batch_size``).
        val_batch_size: validation instances per batch (default ``batch_size``).
        seed: base seed of the training data; the validation data use
            ``val_seed`` (default ``seed + 10**9``, disjoint from training seeds).
        num_workers: DataLoader workers (generation is cheap; 0 is fine).
        generator_kwargs: extra arguments of ``make_generator``.
    """

    def __init__(self, problem: str = "cvrp", num_customers: int = 20, batch_size: int = 512,
                 batches_per_epoch: int = 20, val_size: int = 256,
                 val_batch_size: int | None = None, seed: int = 0, val_seed: int | None = None,
                 num_workers: int = 0, **generator_kwargs: Any) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.generator_kwargs = generator_kwargs
        self._keys: tuple[int, Any, list[int]] | None = None   # (epoch, sampler, keys)

    def _loader(self, dataset: Dataset, sampler: Sampler[int]) -> DataLoader:
        hp = self.hparams
        return DataLoader(dataset, batch_size=None, sampler=sampler, collate_fn=_identity,
                          num_workers=hp.num_workers, persistent_workers=hp.num_workers > 0)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self._train_set(),
                            EpochBatchSampler(self.hparams.batches_per_epoch, self._epoch))

    def _epoch(self) -> int | None:
        trainer = getattr(self, "trainer", None)
        return None if trainer is None else int(trainer.current_epoch)

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Training batches: the item of Lightning's current ``(epoch, batch_idx)``.

        Lightning calls this hook after the fetch, with ``current_epoch`` final and
        ``batch_progress.current.ready`` equal to the ``batch_idx`` that
        ``training_step`` will get. An item drawn for another position (only the
        first epoch of a resumed fit) is replaced by the right one."""
        trainer = getattr(self, "trainer", None)
        key = getattr(batch, "generation_key", None)
        if trainer is None or not trainer.training or key is None:
            return batch
        keys = self._epoch_keys(trainer)
        i = trainer.fit_loop.epoch_loop.batch_progress.current.ready
        if i >= len(keys) or keys[i] == key:
            return batch
        return self._train_set()[keys[i]]

    def _epoch_keys(self, trainer: L.Trainer) -> list[int]:
        """This rank's item keys of the current epoch, in order: the train loader's
        sampler as Lightning set it up (under DDP wrapped in a distributed sampler
        that hands each rank its share), listed once per epoch and loader."""
        epoch, sampler = int(trainer.current_epoch), trainer.train_dataloader.sampler
        if self._keys is None or self._keys[:2] != (epoch, sampler):
            self._keys = (epoch, sampler, [int(k) for k in sampler])
        return self._keys[2]

    def _train_set(self) -> GeneratedBatches:
        hp = self.hparams
        return GeneratedBatches(hp.problem, hp.num_customers, hp.batch_size, hp.seed,
                                hp.batches_per_epoch, **self.generator_kwargs)

    def val_dataloader(self) -> DataLoader:
        hp = self.hparams
        vbs = hp.val_batch_size or hp.batch_size
        n = max(1, -(-hp.val_size // vbs))
        seed = hp.seed + 10**9 if hp.val_seed is None else hp.val_seed
        ds = GeneratedBatches(hp.problem, hp.num_customers, vbs, seed, n, **self.generator_kwargs)
        return self._loader(ds, SequentialSampler(ds))   # no set_epoch: the same every epoch
