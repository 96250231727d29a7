"""The pricing refresh: engine snapshot -> forwards -> implied vols -> smiles -> limits ->
publish, every ``period_s`` in a background thread or on demand.

A refresh recomputes only what changed. Every step is per (underlying, expiry) group, so a
group none of whose series moved since the last refresh keeps the last refresh's forward,
smile, implied vols and limits, and only the groups with a new or changed series are priced
again (``compute_pricing``'s ``prev``): the same numbers, bit for bit, as pricing everything
(tests/unit/test_pricing_incremental.py), for a tenth of the work when a tenth of the groups
moved (100 ms refreshes of a 1x capture: docs/benchmarks.md).

The refresher's own work is O(what moved) too: its snapshot is a ``SeriesMirror`` that reads
again only the series whose seqlock sequence moved and lists those whose priced fields
changed, the previous refresh's per-series arrays are updated in place, and the back buffer
gets only the limits it lacks (those priced at this refresh or the one before).

Nothing here blocks the hot path: the snapshot reads each series under its seqlock, and the
limits go into the engine's back buffer, which the hot path takes at its next batch. When the
hot path has not yet taken the previous publish (no batch since), a refresh computes nothing
and reports it; the next one publishes.
"""
from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

import numpy as np

from decision_engines.engine import DecisionEngine, priced_changed
from decision_engines.engine_config import PricingConfig
from decision_engines.engine_mirror import SeriesMirror
from decision_engines.engine_records import NO_SLOT
from decision_engines.pricing.bands import build_group_refs, build_refs
from decision_engines.pricing.forward import Forwards, implied_forwards, parity_pairs
from decision_engines.pricing.implied_vol import implied_vol
from decision_engines.pricing.smile import Smiles, fit_smiles
from feedhandlers.opra_record import PRICE_SCALE
from omdp.record import copy_records, copy_rows


@dataclass(frozen=True)
class PricingState:
    """Everything one refresh computed, indexed by series slot or group id."""

    series: np.ndarray        # SERIES_INFO_DTYPE snapshot
    groups: np.ndarray        # GROUP_INFO_DTYPE
    years: np.ndarray         # time to expiry per group (NaN: bad expiry)
    forwards: Forwards
    mid_iv: np.ndarray        # implied vol of each series' NBBO mid (NaN where none)
    smiles: Smiles
    value: np.ndarray         # smile model value per series (NaN where none)
    refs: np.ndarray          # SERIES_REF_DTYPE, max_series entries
    group_refs: np.ndarray    # GROUP_REF_DTYPE, max_groups entries
    seconds: float            # wall time of the computation
    repriced: int = -1        # series priced again (the others kept from the previous state); -1: all
    slots: np.ndarray | None = None      # those series' slots (None: all were priced)
    group_ids: np.ndarray | None = None  # the groups priced again (None: all)
    series_group: np.ndarray | None = None  # each series' group as int64, -1: none (kept for the next refresh)


def years_to_expiry(expiry: np.ndarray, as_of: dt.date, hours_left: float) -> np.ndarray:
    """(expiry date - as_of) in years of 365 days plus ``hours_left`` hours; NaN for a date
    that is not one, and for an expiry before as_of."""
    e = np.asarray(expiry, dtype=np.int64)
    y, m, d = e // 10000, (e // 100) % 100, e % 100
    valid = (m >= 1) & (m <= 12) & (d >= 1) & (d <= 31) & (y >= 1970)
    months = np.where(valid, (y - 1970) * 12 + (m - 1), 0).astype("datetime64[M]")
    days = months.astype("datetime64[D]") + np.where(valid, d - 1, 0).astype("timedelta64[D]")
    delta = (days - np.datetime64(as_of, "D")).astype(np.int64)
    years = (delta + hours_left / 24.0) / 365.0
    return np.where(valid & (delta >= 0), years, np.nan)


PRICED_FIELDS = ("strike_px", "bid_px", "offer_px", "put_call", "group", "twin")
"""The snapshot's series fields pricing reads; nothing else of a series changes its limits
(``priced_changed`` compares these, in C)."""
FULL_REPRICE_SHARE = 0.5
"""Above this share of series to price again, pricing everything is cheaper than the subset."""


def compute_pricing(series: np.ndarray, groups: np.ndarray, max_series: int, cfg: PricingConfig,
                    max_groups: int | None = None, prev: PricingState | None = None,
                    changed: np.ndarray | None = None) -> PricingState:
    """The whole off-hot-path computation from one snapshot: without ``changed``, a pure
    function of its inputs.

    ``prev``: the state of the previous refresh of the same engine with the same ``cfg``,
    ``max_series`` and ``max_groups``; only the groups that changed since are computed, the
    result identical to computing them all. ``changed``: the slots new or changed in a field
    pricing reads since ``prev.series``, when the caller knows them (``SeriesMirror.update``):
    the snapshots are not compared, and ``prev``'s per-series arrays (limits, implied vols,
    model values) and group limits are updated in place, so ``prev`` is consumed: only the
    returned state is valid afterwards."""
    t0 = time.perf_counter()
    state = None
    if prev is not None and len(prev.refs) == max_series:
        state = _reprice_changed(series, groups, max_series, cfg, max_groups, prev, changed)
    if state is None:
        state = _price_all(series, groups, max_series, cfg, max_groups)
    return replace(state, seconds=time.perf_counter() - t0)


def _price_all(series: np.ndarray, groups: np.ndarray, max_series: int, cfg: PricingConfig,
               max_groups: int | None) -> PricingState:
    """Every series of the snapshot priced (``seconds`` left for compute_pricing to set)."""
    n_groups = len(groups)
    years = years_to_expiry(groups["expiry"], cfg.as_of, cfg.hours_left_on_expiry_day)
    strike = series["strike_px"] / PRICE_SCALE
    bid = series["bid_px"] / PRICE_SCALE
    offer = series["offer_px"] / PRICE_SCALE
    is_call = series["put_call"] == ord("C")
    group = _group_ids(series["group"], n_groups)
    twin = series["twin"].astype(np.int64)
    in_group = group >= 0
    usable = (series["bid_px"] > 0) & (series["offer_px"] > series["bid_px"]) & in_group
    usable &= np.isfinite(years[np.where(in_group, group, 0)]) if n_groups else False

    prior = np.exp(-cfg.rate * np.nan_to_num(years, nan=0.0))
    pairs = parity_pairs(strike, bid, offer, is_call, twin, np.where(in_group, group, -1), usable)
    fwd = implied_forwards(pairs, n_groups, prior, cfg.min_pairs_for_discount, cfg.outlier_mads)

    gi = np.where(in_group, group, 0)
    F = fwd.forward[gi] if n_groups else np.full(len(series), np.nan)
    D = fwd.discount[gi] if n_groups else np.ones(len(series))
    T = years[gi] if n_groups else np.full(len(series), np.nan)
    has_fwd = usable & np.isfinite(F) & np.isfinite(T)
    mid_iv = np.full(len(series), np.nan)
    if has_fwd.any():
        mid_iv[has_fwd] = implied_vol(0.5 * (bid + offer)[has_fwd], F[has_fwd], strike[has_fwd], T[has_fwd],
                                      D[has_fwd], is_call[has_fwd])
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.log(strike / F)
    otm = has_fwd & np.where(is_call, k >= 0, k < 0)
    smiles = fit_smiles(k[otm], mid_iv[otm], group[otm], n_groups, cfg.min_smile_points, cfg.outlier_mads,
                        cfg.outlier_floor_vol)
    mid = np.where(usable, 0.5 * (bid + offer), np.nan)
    refs, value = build_refs(max_series, strike, is_call, twin, group, years, mid, fwd, smiles, cfg)
    group_refs = build_group_refs(n_groups if max_groups is None else max_groups, years, fwd, smiles, cfg)
    return PricingState(series, groups, years, fwd, mid_iv, smiles, value, refs, group_refs, 0.0, series_group=group)


def _group_ids(group: np.ndarray, ng: int) -> np.ndarray:
    """Snapshot group fields as int64 group ids, -1 for none (NO_SLOT) or one not among the
    ng groups (np.where with -1 would keep uint32: -1 wrapping to NO_SLOT)."""
    gi = group.astype(np.int64)
    gi[gi >= ng] = -1
    return gi


def _series_groups(series: np.ndarray, ng: int, prev: PricingState, n0: int, kept: bool) -> np.ndarray:
    """Each series' group id (``_group_ids``); ``kept``: the first n0 are ``prev``'s (a
    slot's group is set once, when the engine first sees the series: only new slots are
    read, not a strided field of every 64-byte record)."""
    if kept and prev.series_group is not None and len(prev.series_group) == n0:
        return np.concatenate([prev.series_group, _group_ids(series["group"][n0:], ng)])
    return _group_ids(series["group"], ng)


def _to_price(series: np.ndarray, groups: np.ndarray, prev: PricingState, n0: int,
              slots: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(series to price again, groups to price again, as masks; each series' group), or
    None when ``prev`` cannot be built on (the snapshot lost series or groups: an engine
    handed some away). ``n0``: the series ``prev`` priced; ``slots``: those new or changed
    since (None: found by comparing ``series`` with ``prev.series``).

    A group is priced again when it is new or changed, or when a series of it (now or at
    ``prev``) is new or changed in a field pricing reads; a pair's legs go together."""
    n, ng, g0 = len(series), len(groups), len(prev.groups)
    if n < n0 or ng < g0:
        return None
    dirty = np.ones(ng + 1, dtype=bool)   # the last entry: "in no group", never priced again by itself
    dirty[:g0] = (groups["underlying_id"][:g0] != prev.groups["underlying_id"]) | (groups["expiry"][:g0] != prev.groups["expiry"])
    if slots is None:
        changed = np.ones(n, dtype=bool)
        changed[:n0] = priced_changed(series[:n0], prev.series)
        idx = np.nonzero(changed)[0]
    else:
        changed = np.zeros(n, dtype=bool)
        changed[slots] = True
        idx = slots
    twin = series["twin"]
    gi = _series_groups(series, ng, prev, n0, slots is not None)
    dirty[gi[idx]] = True   # (-1: the last entry)
    if slots is None:  # a snapshot given from outside may move a series between groups
        old_g = prev.series["group"][idx[idx < n0]].astype(np.int64)
        dirty[old_g[old_g < ng]] = True
    dirty[ng] = False
    while True:
        need = changed | dirty[gi]
        t = twin[need]
        t = t[t < n].astype(np.int64)
        more = gi[t]
        more = more[(more >= 0) & ~dirty[more]]
        if not more.size:
            need[t] = True
            return need, dirty[:ng], gi
        dirty[more] = True


def _reprice_changed(series: np.ndarray, groups: np.ndarray, max_series: int, cfg: PricingConfig,
                     max_groups: int | None, prev: PricingState, slots: np.ndarray | None) -> PricingState | None:
    """``prev`` with the groups that changed since priced again (None: price everything);
    with ``slots`` (compute_pricing's ``changed``) prev's arrays are updated in place."""
    found = _to_price(series, groups, prev, len(prev.series), slots)
    if found is None:
        return None
    need, dirty, series_group = found
    n, ng, g0 = len(series), len(groups), len(prev.groups)
    sel = np.nonzero(need)[0]
    if len(sel) > FULL_REPRICE_SHARE * n:
        return None
    in_place = slots is not None
    # a group keeps its expiry (one that changed is dirty), so only the dirty ones' years
    # are computed again, with their pricing below
    years = _grown(prev.years, ng, np.nan, in_place)
    mid_iv, value = _grown(prev.mid_iv, n, np.nan, in_place), _grown(prev.value, n, np.nan, in_place)
    fwd, smiles = prev.forwards, prev.smiles
    forward, discount = _grown(fwd.forward, ng, np.nan), _grown(fwd.discount, ng, np.nan)
    pairs, fitted = _grown(fwd.pairs, ng, 0), _grown(fwd.discount_fitted, ng, False)
    coef = np.full((ng, 3), np.nan)
    coef[:g0] = smiles.coef
    points, k_min, k_max = _grown(smiles.points, ng, 0), _grown(smiles.k_min, ng, np.nan), _grown(smiles.k_max, ng, np.nan)
    refs = prev.refs if in_place else prev.refs.copy()
    group_refs = _grown(prev.group_refs, ng if max_groups is None else max_groups, 0, in_place)
    dg = np.nonzero(dirty)[0]
    if len(sel) or len(dg):  # a new group with no series yet still gets its prior discount
        gmap = np.full(ng + 1, NO_SLOT, dtype=np.uint32)   # old group id -> the subset's
        gmap[dg] = np.arange(len(dg), dtype=np.uint32)
        smap = np.full(n + 1, NO_SLOT, dtype=np.uint32)    # old slot -> the subset's
        smap[sel] = np.arange(len(sel), dtype=np.uint32)
        sub = np.take(series, sel)   # take / put: a structured array's fancy indexing copies
                                     # field by field, 10-20x slower (docs/benchmarks.md)
        sub["group"] = gmap[np.minimum(sub["group"], ng)]
        sub["twin"] = smap[np.minimum(sub["twin"], n)]
        part = _price_all(sub, np.take(groups, dg), len(sel), cfg, len(dg))
        mid_iv[sel], value[sel], years[dg] = part.mid_iv, part.value, part.years
        np.put(refs, sel, part.refs)
        forward[dg], discount[dg] = part.forwards.forward, part.forwards.discount
        pairs[dg], fitted[dg] = part.forwards.pairs, part.forwards.discount_fitted
        coef[dg], points[dg] = part.smiles.coef, part.smiles.points
        k_min[dg], k_max[dg] = part.smiles.k_min, part.smiles.k_max
        kept = dg < len(group_refs)
        np.put(group_refs, dg[kept], np.compress(kept, part.group_refs))
    return PricingState(series, groups, years, Forwards(forward, discount, pairs, fitted), mid_iv,
                        Smiles(coef, points, k_min, k_max), value, refs, group_refs, 0.0, len(sel), sel, dg,
                        series_group)


def _grown(a: np.ndarray, n: int, fill: object, in_place: bool = False) -> np.ndarray:
    """a's first n values followed by ``fill`` up to n entries (a copy; ``in_place``: a
    itself when it already has n entries)."""
    if in_place and len(a) == n:
        return a
    out = np.full(n, fill, dtype=a.dtype) if a.dtype.names is None else np.zeros(n, dtype=a.dtype)
    m = min(len(a), n)
    out[:m] = a[:m]
    return out


class PricingRefresher:
    """Refreshes an engine's limits from its own NBBOs: ``refresh()`` on demand, or
    ``start()`` a background thread that refreshes every ``config.period_s``."""

    def __init__(self, engine: DecisionEngine, config: PricingConfig) -> None:
        self.engine = engine
        self.config = config
        self.last: PricingState | None = None
        self.published = 0
        self.busy = 0
        self.failures = 0
        self.last_error: str | None = None
        self.seconds = 0.0      # the published refreshes, summed (wall time: snapshot, pricing, publish)
        self.cpu_s = 0.0        # the same refreshes' CPU time (a niced thread waits: wall > CPU)
        self.repriced = 0       # series priced in them, summed (all of a snapshot on a full refresh)
        self.series = 0         # series their snapshots held, summed
        self._mirror = SeriesMirror()
        # (series slots, groups) whose limits the back buffer lacks: those priced at the last
        # publish (the buffer has those of the one before); None: it needs every row
        self._stale: tuple[np.ndarray, np.ndarray] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def refresh(self) -> PricingState | None:
        """One refresh; None when the hot path has not yet taken the previous publish."""
        with self._lock:
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            back = self.engine.begin_refs()
            if back is None:
                self.busy += 1
                return None
            gback = self.engine.group_refs_back()
            try:
                changed = self._mirror.update(self.engine)
                state = compute_pricing(self._mirror.series, self.engine.groups(), len(back), self.config, len(gback),
                                        prev=self.last, changed=changed)
            except BaseException:
                # the mirror has moved on and ``last`` may be half updated: start afresh
                self.last, self._stale = None, None
                raise
            self._write_back(back, gback, state)
            self.engine.publish_refs()
            self.published += 1
            self.cpu_s += time.thread_time() - cpu0
            self.seconds += time.perf_counter() - wall0
            self.repriced += len(state.series) if state.repriced < 0 else state.repriced
            self.series += len(state.series)
            self.last = state
            return state

    def _write_back(self, back: np.ndarray, gback: np.ndarray, state: PricingState) -> None:
        """The back buffer brought up to ``state``: every row after pricing everything (or
        when the buffer missed one), else the rows priced now and at the last publish."""
        if state.slots is None or self._stale is None:
            copy_records(back, state.refs)
            copy_records(gback, state.group_refs)
        else:
            copy_rows(back, state.refs, _either(len(back), self._stale[0], state.slots))
            g = _either(min(len(gback), len(state.group_refs)), self._stale[1], state.group_ids)
            copy_rows(gback, state.group_refs, g)
        self._stale = None if state.slots is None else (state.slots, state.group_ids)

    def refresh_counted(self) -> PricingState | None:
        """``refresh()`` for the background loops: a failure is counted and kept
        (``last_error``) instead of raised, so that a bad snapshot - or a bug: a full group
        table once raised IndexError - does not silently end pricing for the rest of the
        run; the run report shows it (``pricing_counters``) and the next period retries."""
        try:
            return self.refresh()
        except Exception as exc:  # noqa: BLE001 - counted and reported, not hidden
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None

    def start(self, cpus: Collection[int] = (), nice: int = 0) -> None:
        """Refresh every ``period_s`` in a daemon thread until :meth:`stop`. ``cpus``: the
        thread runs on those CPUs only (not the one the engine's partition spins on);
        ``nice``: its scheduling niceness (19: it only takes what others leave)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(tuple(cpus), nice), name="omdp-pricing", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread and wait for it."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    def _run(self, cpus: tuple[int, ...], nice: int) -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)  # 0: this thread
        if nice:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # Linux: this thread only
        while not self._stop.wait(self.config.period_s):
            self.refresh_counted()


def _either(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The indices below n in a or b, ascending (a mask: both are short next to n, and
    sorting their union cost more than the rows it copies)."""
    mask = np.zeros(n + 1, dtype=bool)
    mask[np.minimum(a, n)] = True
    mask[np.minimum(b, n)] = True
    return np.flatnonzero(mask[:n])


def pricing_counters(refreshers: Iterable[PricingRefresher]) -> dict[str, int | str]:
    """What the run report says about an operator's pricing, summed over its refreshers:
    refreshes published, skipped because the hot path had not taken the last one (busy),
    failed (with the last error), the time the published ones took (wall and CPU), and the
    series they priced again against those their snapshots held."""
    out: dict[str, int | str] = dict.fromkeys(("pricing_published", "pricing_busy", "pricing_failures", "pricing_us",
                                               "pricing_cpu_us", "pricing_repriced", "pricing_series"), 0)
    for r in refreshers:
        out["pricing_published"] += r.published
        out["pricing_busy"] += r.busy
        out["pricing_failures"] += r.failures
        out["pricing_us"] += round(r.seconds * 1e6)
        out["pricing_cpu_us"] += round(r.cpu_s * 1e6)
        out["pricing_repriced"] += r.repriced
        out["pricing_series"] += r.series
        if r.last_error is not None:
            out["pricing_last_error"] = r.last_error
    return out

