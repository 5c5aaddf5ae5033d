"""The one partitioning of knowbase: a partition per commit, keyed by its full 40-hex SHA."""

from __future__ import annotations

import warnings

import dagster as dg

# Partitioned asset checks are "preview" in Dagster 1.13 but are exactly what STACK.md prescribes
# (a check on a commit partition must not load every partition); the warning is noise for users.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)

commits = dg.DynamicPartitionsDefinition(name="commits")
