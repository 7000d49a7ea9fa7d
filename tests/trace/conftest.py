"""Fixtures of the trace module tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A predictable umask, so that file modes do not depend on the environment."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)
