"""The documented public API is importable from the package roots."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("module", ["producer", "producer.admin", "producer.sink", "coordinator"])
def test_all_names_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


def test_design_brief_imports() -> None:
    from producer import (  # noqa: F401, PLC0415
        AcknowledgeType,
        Admin,
        PreparedTxnState,
        ShareAcknowledgements,
        ShareConsumer,
        TransactionalProducer,
    )
