"""The read graph's named sources, per run: binding, searches per source, failures, evidence.

The Reader reads one or more named sources (``create_read_graph(sources=...)``; the source
contract is in :mod:`mnemon_langgraph.read.sources.binding`). ``plan`` binds each to the run
(its namespace, its ``for_run`` fields) and keeps that in the state (``sources``,
``fields``); every later node rebuilds a source's :class:`BoundSource` from there. With
several sources every search of the plan goes to every source (the instruction search to
the user's own memory only), record ids are qualified by their source's name and each pool
entry names its ``read_source``; a source that fails or times out is marked failed for the
turn (its searches exhausted, the trace's ``source_errors``) and the View is built from the
others. With one plain source nothing here changes the read path.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from typing import Any, cast

from mnemon_langgraph.errors import ConfigurationError, NamespaceAccessError
from mnemon_langgraph.read._drive import Call, Step
from mnemon_langgraph.read._evidence import EvidenceBuilder
from mnemon_langgraph.read._trace import degraded
from mnemon_langgraph.read.namespaces import run_fields
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources.binding import (
    DEFAULT_SOURCE,
    BoundSource,
    bind,
    dense_only,
    is_own,
    named_sources,
    source_namespace,
    split_id,
)
from mnemon_langgraph.read.state import PoolRecord, ReadState
from mnemon_langgraph.types import Namespace, SearchSource

__all__ = ["INSTRUCTIONS", "SourcesNode", "as_named"]

INSTRUCTIONS = "instructions"
"""Origin of the search that looks for the user's standing instructions (``read.instructions``):
the user's own sources only."""

_LANES = (INSTRUCTIONS, "topic")
"""Origins of the first round's lane searches: asked of every source as they are."""

_NOT_PLANNED = (*_LANES, "date")
"""Origins of the first round's searches that the planner did not word (the lanes and the
date-bounded search, whose words are the message's: a dense-only source serves it from the
candidates of the message's own search, within its dates)."""


def as_named(sources: SearchSource | Mapping[str, SearchSource]) -> dict[str, SearchSource]:
    """A Reader's sources by name (one source: ``{"memory": source}``, taken as it is:
    ``create_read_graph`` checked it)."""
    if isinstance(sources, Mapping):
        return named_sources(None, sources)
    return {DEFAULT_SOURCE: sources}


def source_error(name: str, search: int | None, error: BaseException | str) -> list[dict[str, Any]]:
    """The trace events of one source's failure: a ``source_error`` and a degradation."""
    detail = error if isinstance(error, str) else f"{type(error).__name__}: {error!s:.200}"
    where = f"search {search}" if search is not None else "binding"
    return [
        {"event": "source_error", "source": name, "search": search, "error": detail},
        degraded(f"source:{name}", f"{where} failed ({detail}); the View is built without it"),
    ]


class SourcesNode:
    """Mixin: the Reader's named sources. Needs ``sources``, ``settings``."""

    sources: dict[str, SearchSource]
    settings: ReadSettings

    @property
    def multi(self) -> bool:
        """Whether the graph reads several sources (ids qualified, View blocks name them)."""
        return len(self.sources) > 1

    @property
    def binds(self) -> bool:
        """Whether a run's sources are bound through the state (not one plain own source)."""
        return self.multi or any(
            not is_own(s) or callable(getattr(s, "for_run", None)) for s in self.sources.values()
        )

    # --- plan: bind the sources to the run ---------------------------------------------
    def _bind_run(
        self, context: Any, config: Mapping[str, Any] | None, namespace: Namespace
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The state keys that bind the sources to this run, and the trace events of the
        sources that could not be bound (a template field the run lacks)."""
        if not self.binds:
            return {}, []
        spaces: dict[str, list[str]] = {}
        events: list[dict[str, Any]] = []
        for name, src in self.sources.items():
            try:
                spaces[name] = list(source_namespace(src, namespace, context, config))
            except NamespaceAccessError:
                raise  # a client naming another user's (team's) memory is refused, not skipped
            except ConfigurationError as exc:
                if not self.multi:
                    raise
                events.extend(source_error(name, None, exc))
        update: dict[str, Any] = {"sources": spaces}
        if any(callable(getattr(s, "for_run", None)) for s in self.sources.values()):
            update["fields"] = run_fields(context, config)
        return update, events

    def _with_sources(self, update: dict[str, Any], bound: dict[str, Any]) -> dict[str, Any]:
        """``plan``'s update with the sources bound and, with several, each search once per
        source (the instruction search: the user's own sources only)."""
        if not bound:
            return update
        update = {**update, **bound}
        if not self.multi:
            return update
        searches: list[dict[str, Any]] = []
        planned = [s for s in update["searches"] if s["origin"] not in _NOT_PLANNED]
        asking = planned[: self.settings.dense_searches]
        rest = planned[len(asking) :]
        for s in update["searches"]:
            for name in self._live(bound["sources"], s["origin"] == INSTRUCTIONS):
                if self._asked_once(name) and s["origin"] not in _LANES:
                    if any(s is a for a in asking):  # asks the source, for candidates
                        words = [s, *rest] if s is planned[0] else [s]
                        searches.append(self._once(s, words, len(searches), name))
                    else:  # re-ranks (the date search: bounds) the candidates they returned
                        searches.append(self._over(s, len(searches), name))
                    continue
                searches.append({**s, "index": len(searches), "read_source": name})
        update["searches"] = searches
        update["pending"] = [
            {"kind": "page", "search_index": s["index"], "offset": 0} for s in searches
        ]
        return update

    def _asked_once(self, name: str | None) -> bool:
        """Whether source ``name`` ranks by embeddings only and is asked once per turn
        (``ReadSettings.dense_candidates``)."""
        return (
            self.multi
            and self.settings.dense_candidates is not None
            and name in self.sources
            and dense_only(self.sources[name])
        )

    def _once(
        self, first: Mapping[str, Any], planned: Sequence[Mapping[str, Any]], index: int, name: str
    ) -> dict[str, Any]:
        """A search of the turn that asks a dense-only source (the first
        ``dense_searches`` planned ones): ``dense_candidates`` documents for its words,
        re-ranked by the words of ``planned`` (its own; the message's search also those of
        the planned searches that do not ask) and kept in the search (``cache``), from which
        its later pages and the source's other searches of the turn are served."""
        words = " ".join(dict.fromkeys(s["query"] for s in planned))
        return {
            **first,
            "index": index,
            "read_source": name,
            "origin": f"{first['origin']}+once",
            "candidates": self.settings.dense_candidates,
            "rerank": words,
        }

    def _over(self, search: Mapping[str, Any], index: int, name: str) -> dict[str, Any]:
        """A search of a dense-only source served from the candidates its asking searches
        of the turn returned (``over``: the source), re-ranked by this search's own words;
        no call to the source."""
        return {
            **search,
            "index": index,
            "read_source": name,
            "over": name,
            "rerank": search["query"],
        }

    def _live(self, spaces: Mapping[str, Any], own_only: bool = False) -> list[str]:
        """The names of the sources bound for the run, in the graph's order."""
        return [
            name
            for name, src in self.sources.items()
            if name in spaces and (not own_only or is_own(src))
        ]

    def _search_sources(self, state: ReadState, searches: Sequence[Mapping[str, Any]]) -> list:
        """Where a new search of the turn goes: every bound source not failed this turn
        (``[None]``: the one source, no ``read_source`` key)."""
        if not self.multi:
            return [None]
        down = {s.get("read_source") for s in searches if s.get("failed")}
        return [n for n in self._live(state.get("sources") or {}) if n not in down]

    # --- a source bound for the run ----------------------------------------------------
    def _bound(self, state: ReadState, name: str | None = None) -> BoundSource:
        """Source ``name`` (default: the first) bound to the run the state belongs to."""
        name = name or next(iter(self.sources))
        src: Any = self.sources[name]
        spaces = state.get("sources")
        ns = tuple(spaces[name]) if spaces and name in spaces else tuple(state["namespace"])
        timeout = self.settings.source_timeout_s if self.multi else None
        return bind(name, src, ns, state.get("fields"), timeout_s=timeout, qualify=self.multi)

    def _groups(
        self, state: ReadState, entries: Iterable[PoolRecord]
    ) -> list[tuple[BoundSource, list[PoolRecord]]]:
        """``entries`` by their read source, each with its bound source."""
        by: dict[str | None, list[PoolRecord]] = {}
        for p in entries:
            by.setdefault(p.get("read_source") if self.multi else None, []).append(p)
        return [(self._bound(state, name), group) for name, group in by.items()]

    # --- retrieve ----------------------------------------------------------------------
    def _source_failed(
        self, searches: list[dict[str, Any]], idx: int, error: BaseException
    ) -> list[dict[str, Any]]:
        """Mark a failed source's searches failed and exhausted (it is not asked again this
        turn); its trace events."""
        name = searches[idx].get("read_source")
        for s in searches:
            if s.get("read_source") == name:
                s["exhausted"] = True
                s["failed"] = True
        return source_error(str(name), idx, error)

    def _tag(self, pool: list[PoolRecord]) -> list[PoolRecord]:
        """Pool entries with their ``read_source`` (from the qualified id), several sources."""
        if not self.multi:
            return pool
        out: list[PoolRecord] = []
        for p in pool:
            if "read_source" not in p:
                p = cast(PoolRecord, {**p, "read_source": split_id(p["id"])[0]})
            out.append(p)
        return out

    def _own_ids(self, ids: Sequence[str]) -> list[str]:
        """Of ``ids``, those of the user's own memory as its index knows them (unqualified);
        one source: all of them."""
        if not self.multi:
            return list(ids)
        out = []
        for rid in ids:
            name, raw = split_id(rid)
            if name in self.sources and is_own(self.sources[name]):
                out.append(raw)
        return out

    def _own_entries(self, pool: Sequence[PoolRecord]) -> list[PoolRecord]:
        """The pool entries of the user's own memory (one source: all)."""
        if not self.multi:
            return list(pool)
        return [
            p
            for p in pool
            if p.get("read_source") in self.sources and is_own(self.sources[p["read_source"]])
        ]

    # --- judge: evidence per source ----------------------------------------------------
    def _evidence_parts(
        self, state: ReadState, todo: Sequence[PoolRecord], default: EvidenceBuilder
    ) -> list[tuple[Namespace, EvidenceBuilder, list[PoolRecord]]]:
        """Who builds the evidence of which records: one plain source, its builder; else a
        builder per source over the capabilities it offers, in its own namespace."""
        if not self.binds:
            return [(tuple(state["namespace"]), default, list(todo))]
        return [
            (bound.namespace, EvidenceBuilder(bound.capabilities(), self.settings.rrf_k), group)
            for bound, group in self._groups(state, todo)
        ]

    def _memory_terms_all(
        self, state: ReadState, messages: Sequence[Any], needs: Sequence[Any]
    ) -> Generator[Step, Any, dict[str, Any] | None]:
        """The query words' counts summed over every source that can count them."""
        total: dict[str, Any] | None = None
        for name in self._live(state.get("sources") or {}):
            bound = self._bound(state, name)
            builder = EvidenceBuilder(bound.capabilities(), self.settings.rrf_k)
            found = yield Call(
                builder.memory_terms, builder.amemory_terms, (bound.namespace, messages, needs)
            )
            if not isinstance(found, dict):
                continue
            if total is None:
                total = {"records": 0, "df": {}}
            total["records"] += found["records"]
            for term, n in found["df"].items():
                total["df"][term] = total["df"].get(term, 0) + n
        return total
