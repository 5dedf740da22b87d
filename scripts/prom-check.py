#!/usr/bin/env python3
"""Parses a Prometheus exposition of two flock pools with prometheus_client's parser and
checks what a scraper needs: every family once, every sample labelled with its pool, both
pools present, no series twice. Usage: prom-check.py FILE [--no-stats]."""
import sys
from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

STATS_ONLY = {"flock_tasks_stolen", "flock_parks", "flock_wakeups"}


def main():
    path, no_stats = sys.argv[1], "--no-stats" in sys.argv[2:]
    text = open(path, encoding="utf-8").read()
    families = list(text_string_to_metric_families(text))
    names = Counter(f.name for f in families)
    twice = [n for n, c in names.items() if c > 1]
    assert not twice, f"families given more than once: {twice}"
    series = Counter()
    pools = set()
    for family in families:
        assert family.samples, f"{family.name}: no samples"
        for s in family.samples:
            assert "pool" in s.labels, f"{s.name}{s.labels}: no pool label"
            pools.add(s.labels["pool"])
            series[(s.name, tuple(sorted(s.labels.items())))] += 1
    dup = [k for k, c in series.items() if c > 1]
    assert not dup, f"series twice: {dup[:3]}"
    assert pools == {"db", "io"}, pools
    present = STATS_ONLY & set(names)
    if no_stats:
        assert not present, f"without the stats feature these must be left out: {present}"
    else:
        assert present == STATS_ONLY, f"missing: {STATS_ONLY - present}"
    kinds = Counter(f.type for f in families)
    print(
        f"prom-check: {path}: {len(families)} families ({dict(sorted(kinds.items()))}), "
        f"{sum(series.values())} samples, pools {sorted(pools)}, "
        f"stats families {'absent' if no_stats else 'present'}: OK"
    )


if __name__ == "__main__":
    main()
