"""A hub with the splitter and the decision publisher in it (the splitter tests' hub: the fleet
plugin runs both by default) and a logical cluster per test."""

from __future__ import annotations

from ..splitter.conftest import fleet, split_hub

__all__ = ["fleet", "split_hub"]
