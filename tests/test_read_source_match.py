"""Several read sources on one scale (``ReadSettings.source_match``, ``read._source_match``):
the first pool's places shared by how much of the turn's words each source's first results
name; one source, or the setting off, changes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._source_match import (
    named_terms,
    pool_quotas,
    source_coverage,
    source_weights,
    unnamed_records,
)
from mnemon_langgraph.read._view_order import unnamed_last
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext

NS = ("users", "ada")
QUESTION = "What did Ada plant in the allotment beside the greenhouse?"


def _searches(*queries: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"query": q, "origin": "message", "round": 1, **extra} for q in queries]


def test_coverage_is_the_share_of_the_turns_terms_a_sources_first_results_name() -> None:
    texts = {
        "memory": ["Ada: I planted beans in the allotment", "Ada: the greenhouse"],
        "others": ["Bo: I planted leeks in my allotment"],
    }
    searches = _searches(QUESTION)
    searches += [{"query": "Ada greenhouse", "origin": "instructions", "round": 1}]
    coverage = source_coverage(searches, texts)
    # terms: ada, plant, allot(ment), beside, greenhous(e); memory names all but "beside"
    assert coverage["memory"] == pytest.approx(4 / 5)
    assert coverage["others"] == pytest.approx(2 / 5)  # plant, allotment
    weights = source_weights(searches, texts, 2.0)
    assert weights == pytest.approx({"memory": 1.0, "others": (2 / 4) ** 2})
    assert source_weights(searches, texts, 0.0) == {}  # the switch off
    assert source_weights(searches, {"memory": texts["memory"]}, 2.0) == {}  # one source
    # follow searches and later rounds are not the turn's wording
    follow = _searches("Bo leeks", record_id="others:others0") + _searches("Bo", round=2)
    assert source_coverage(follow, texts) == {}


def test_the_first_pools_places_follow_the_weights() -> None:
    assert pool_quotas(48, ["memory", "others"], {"memory": 1.0, "others": 0.2}) == {
        "memory": 40,
        "others": 8,
    }
    # equal weights: the equal shares the pool gives without them
    assert pool_quotas(48, ["memory", "others"], {"memory": 1.0, "others": 1.0}) == {
        "memory": 24,
        "others": 24,
    }
    assert pool_quotas(48, ["memory", "others"], {"memory": 1.0, "others": 0.0})["others"] == 1


def _journal() -> InMemorySearchSource:
    return InMemorySearchSource(
        [
            make_record(
                f"m{i}",
                f"Ada: I planted {crop} in the allotment beside the greenhouse, week {i}",
                namespace=NS,
                session=1 + i // 4,
                date=datetime(2024, 4, 1) + timedelta(days=i),
                position=i % 4,
            )
            for i, crop in enumerate(["beans", "peas", "leeks", "onions"] * 10)
        ]
    )


def _others() -> InMemorySearchSource:
    """Another person's notes: the same kind of things, of the turn's own words only one."""
    return InMemorySearchSource(
        [
            make_record(
                f"o{i}",
                f"Bo: we sowed carrots on the plot near the shed, week {i}; I planted nothing",
                namespace=NS,
                session=1 + i // 4,
                date=datetime(2024, 4, 1) + timedelta(days=i),
                position=i % 4,
            )
            for i in range(40)
        ]
    )


def _rates_others_higher(qid: str, question: Any, state: Any) -> float:
    """The judge rates the other person's notes a little above the user's own records."""
    rows = {r["id"]: r for r in state["records"]}
    return 0.95 if "Bo: " in str(rows.get(qid.partition(".")[0], {}).get("text", "")) else 0.9


def _read(sources: Any, power: float, view_chars: int = 12_000) -> Any:
    # a small pool: the two sources compete for its places
    # the View's names rule off: this measures the first pool's shares alone
    settings = ReadSettings(
        view_chars=view_chars, pool_size=24, source_match=power, source_names=False
    )
    kind = {"sources": sources} if isinstance(sources, dict) else {"source": sources}
    judge = ScriptedDecisionModel(answers=_rates_others_higher)
    graph = create_read_graph(**kind, judge=judge, settings=settings)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=ReadContext(namespace=NS))
    return out["view"]


def test_a_source_that_names_little_of_the_turn_gets_fewer_first_pool_places() -> None:
    sources = {"memory": _journal(), "others": _others()}
    off = _read(sources, 0.0, view_chars=1_500)
    on = _read(sources, 2.0, view_chars=1_500)
    assert "source_match" not in off.trace
    weights = on.trace["source_match"]
    assert weights["memory"] == 1.0 and 0 < weights["others"] < 0.5

    def first(view: Any, source: str) -> int:
        return sum(1 for p in view.trace["pool"] if p["round"] == 1 and p["id"][:7] == source)

    assert first(off, "others:") == first(off, "memory:") == 12  # equal shares of 24
    assert first(on, "others:") < 12 < first(on, "memory:")
    # System 1's scores are the judge's own
    p_others = {j["p"] for j in on.trace["judgments"] if j["target"].startswith("others:")}
    assert p_others == {0.95}

    def shown(view: Any, source: str) -> int:
        return sum(1 for r in view.records if r.source == source)

    # the small View: the other person's notes gave up places to the user's own
    assert shown(off, "others") > 0 and shown(on, "others") < shown(off, "others")


def test_with_one_source_the_switch_changes_nothing() -> None:
    off, on = _read(_journal(), 0.0), _read(_journal(), 2.0)
    assert "source_match" not in on.trace
    assert on.text == off.text and [r.id for r in on.records] == [r.id for r in off.records]
    assert on.trace["judgments"] == off.trace["judgments"]
    assert on.trace["pool"] == off.trace["pool"]


def test_a_negative_power_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="source_match"):
        ReadSettings(source_match=-1.0)
    assert ReadSettings().source_match == 2.0  # on by default (docs/results/documents.md)
    assert ReadSettings().source_names is True


# --- the names the turn names (``source_names``, ``source_match_names``) ----------------


def _rec(rid: str, source: str, text: str) -> dict[str, Any]:
    return {"id": f"{source}:{rid}", "read_source": source, "text": text}


def test_the_turns_names_are_its_capitalised_words_as_index_terms() -> None:
    assert named_terms([QUESTION]) == {"ada"}
    assert named_terms(["where did Ada and Bo go in Lisbon?", "the plan"]) == {
        "ada",
        "bo",
        "lisbon",
    }
    assert named_terms(["what did she plant?"]) == set()


def test_unnamed_records_are_a_lesser_naming_sources_records_that_name_none() -> None:
    pool = [
        _rec("m1", "memory", "Ada: I planted beans in the allotment"),
        _rec("m2", "memory", "Bo: the greenhouse needs a new pane"),
        _rec("m3", "memory", "Ada: the weather was fine"),  # of the best source: kept
        _rec("o1", "others", "Cy: I planted leeks in my allotment"),
        _rec("o2", "others", "Cy: the greenhouse at the club"),
        _rec("o3", "others", "Cy: Ada lent me her spade"),  # names Ada: kept
    ]
    names = named_terms(["What did Ada and Bo plant in the allotment?"])
    assert names == {"ada", "bo"}
    assert unnamed_records(pool, names) == {"others:o1", "others:o2"}
    # a source that names as many of the names as the best one keeps every record
    even = [*pool, _rec("o4", "others", "Di: Bo came by")]
    assert unnamed_records(even, names) == set()
    # one source, or a turn that names no name: nothing
    assert unnamed_records(pool[:3], names) == set()
    untagged = [{k: v for k, v in r.items() if k != "read_source"} for r in pool]
    assert unnamed_records(untagged, names) == set()
    assert unnamed_records(pool, set()) == set()


def test_unnamed_records_enter_the_view_last_in_their_order() -> None:
    cands = [("o1", "needed"), ("m1", "needed"), ("o2", "rank"), ("m2", "rank")]
    out = unnamed_last(cands, {"o1", "o2"})
    assert [rid for rid, _ in out] == ["m1", "m2", "o1", "o2"]
    assert out[0] == ("m1", "needed") and "names none of the names" in out[2][1]
    assert unnamed_last(cands, set()) == cands


def _read_names(sources: Any, names: bool, view_chars: int = 1_500) -> Any:
    settings = ReadSettings(view_chars=view_chars, pool_size=24, source_names=names)
    kind = {"sources": sources} if isinstance(sources, dict) else {"source": sources}
    judge = ScriptedDecisionModel(answers=_rates_others_higher)
    graph = create_read_graph(**kind, judge=judge, settings=settings)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=ReadContext(namespace=NS))
    return out["view"]


def test_a_source_that_names_none_of_the_turns_names_gives_the_view_to_the_one_that_does() -> None:
    sources = {"memory": _journal(), "others": _others()}
    off, on = _read_names(sources, False), _read_names(sources, True)

    def shown(view: Any, source: str) -> int:
        return sum(1 for r in view.records if r.source == source)

    # the judge rates the other person's notes higher: without the rule they lead the View
    assert shown(off, "others") > 0
    assert shown(on, "others") == 0 and shown(on, "memory") > shown(off, "memory")

    placed = on.trace["placement"]
    assert any("names none of the names" in placed[p["id"]] for p in on.trace["pool"])
    # System 1's scores are the judge's own
    p_others = {j["p"] for j in on.trace["judgments"] if j["target"].startswith("others:")}
    assert p_others == {0.95}


def test_with_one_source_the_names_rules_change_nothing() -> None:
    off, on = _read_names(_journal(), False, 12_000), _read_names(_journal(), True, 12_000)
    assert "source_match" not in on.trace
    assert on.text == off.text and [r.id for r in on.records] == [r.id for r in off.records]
    assert on.trace["judgments"] == off.trace["judgments"]
    assert on.trace["pool"] == off.trace["pool"]
    assert on.trace["placement"] == off.trace["placement"]


def test_coverage_and_unnamed_records_are_the_plain_set_formulas_on_random_texts() -> None:
    """Each text's terms met with the turn's terms (or names): the plain intersections."""
    import random

    from mnemon_langgraph.search._text import terms

    words = ["Ada", "Leeds", "garden", "rain", "Bo", "Paris", "tea", "walk", "the"]
    rng = random.Random(13)
    for _ in range(150):
        texts = {
            name: [" ".join(rng.choices(words, k=rng.randint(0, 6))) for _ in range(8)]
            for name in ("memory", "docs")
        }
        query = " ".join(rng.choices(words, k=rng.randint(1, 4)))
        searches = [{"query": query, "origin": "message", "round": 1}]
        wanted = set(terms(query))
        plain = {
            name: len({t for x in its for t in wanted.intersection(terms(x))}) / max(1, len(wanted))
            for name, its in texts.items()
        }
        assert source_coverage(searches, texts) == (plain if wanted else {})
        names = named_terms([query])
        records = [
            {"id": f"{name}{i}", "text": x, "read_source": name}
            for name, its in texts.items()
            for i, x in enumerate(its)
        ]
        own = {r["id"]: names.intersection(terms(r["text"])) for r in records}
        named = {
            name: {t for r in records if r["read_source"] == name for t in own[r["id"]]}
            for name in texts
        }
        best = max(len(v) for v in named.values())
        want = {
            r["id"] for r in records if len(named[r["read_source"]]) < best and not own[r["id"]]
        }
        assert unnamed_records(records, names) == (want if names else set())
