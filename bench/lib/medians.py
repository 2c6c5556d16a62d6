"""Figures over repeated benchmark runs: each run is a dict of figures; a
cell is the median over the runs that have the figure, with its range."""
import statistics


def values(rs, key):
    """The figure `key` of every run that has it."""
    return [r[key] for r in rs or [] if r.get(key) is not None]


def cell(rs, key, fmt):
    """The median formatted with fmt, and "(min-max)" when there are several runs."""
    v = values(rs, key)
    if not v:
        return "-"
    m = fmt % statistics.median(v)
    return m if len(v) == 1 else "%s (%s-%s)" % (m, fmt % min(v), fmt % max(v))


def median(rs, key):
    """The median, or None when no run has the figure."""
    v = values(rs, key)
    return statistics.median(v) if v else None
