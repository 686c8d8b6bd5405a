"""The environment of a simulation run: memoized coordinator-record decoders, the cyclic
garbage collector paused, broker logging silenced."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from chaos.patching import Patch, replace


def _memoized(fn: Callable[..., Any], *, copy: bool = False) -> Callable[..., Any]:
    """``fn`` with its results kept by argument (arguments that cannot be keys are not)."""
    cache: dict[Any, Any] = {}

    def wrapper(*args: Any) -> Any:
        try:
            result = cache[args]
        except KeyError:
            result = cache[args] = fn(*args)
        except TypeError:  # e.g. a memoryview
            return fn(*args)
        return list(result) if copy else result

    return wrapper


def _install_replay_cache(stack: ExitStack) -> None:
    import coordinator.shard_runtime as runtime  # noqa: PLC0415
    import coordinator.share.group_shard as groups  # noqa: PLC0415
    import coordinator.txn_shard as txns  # noqa: PLC0415
    from coordinator.share.group_records import decode  # noqa: PLC0415
    from txn import txn_log  # noqa: PLC0415

    records = _memoized(txn_log.read_records, copy=True)
    for module in (runtime,):
        replace(stack, module, "read_records", records)
    for name in ("decode_key", "decode_value"):
        replace(stack, txns, name, _memoized(getattr(txn_log, name)))
    replace(stack, groups, "decode", _memoized(decode))


def replay_cache() -> Patch:
    """Every broker restart replays the coordinator logs from the start, decoding the same
    records again (compaction seeds clean them now and then, most seeds never); their decoders
    are pure functions of the bytes, so a run keeps what they returned.  Not a change of
    behaviour: a speed-up (and fresh for every run)."""
    return Patch("replay-cache", "memoized decoders of coordinator records", _install_replay_cache)


@contextmanager
def no_gc() -> Iterator[None]:
    """A run makes millions of short-lived objects and almost no cycles: the cyclic collector
    would cost a sixth of the time and free next to nothing, so it waits until the run ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def quiet_logs() -> Iterator[None]:
    """The broker logs every injected fault; a simulation runs thousands of them."""
    saved = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(saved)
