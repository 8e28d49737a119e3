"""BM25 of common words bounded from bytes (``search/_bounds.py``, ``MaxScore._bounded``):
the same rankings, scores and ties as scoring every document, on random corpora."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

import mnemon_langgraph.search._maxscore as maxscore
from mnemon_langgraph.search._bm25 import NO_DATE, BM25Index, tokenize
from mnemon_langgraph.search._bounds import (
    CODE_MAX,
    code_weights,
    impact_codes,
    sample_level,
    sum_codes,
)
from mnemon_langgraph.search._formula import BM25_B, BM25_K1, idf

_VOCAB = [f"w{i}q" for i in range(400)]


def test_impact_codes_never_fall_below_the_impacts() -> None:
    rng = np.random.default_rng(1)
    docs = np.sort(rng.choice(5000, size=3000, replace=False)).astype(np.int32)
    impacts = rng.random(3000, dtype=np.float32) * 0.9 + 1e-6
    codes, top = impact_codes(docs, impacts, 5000)
    assert top == float(impacts.max())
    assert codes.dtype == np.uint8 and codes[docs].min() >= 1
    assert int(codes.max()) == CODE_MAX
    absent = np.setdiff1d(np.arange(5000), docs)
    assert not codes[absent].any()
    bound = codes[docs].astype(np.float64) * top / CODE_MAX
    assert np.all(bound >= impacts.astype(np.float64) * (1 - 1e-12))
    assert np.all(bound - impacts <= top / CODE_MAX + 1e-9)  # at most one step above


@pytest.mark.parametrize("terms", [1, 2, 8, 30, 257])
def test_code_weights_bound_each_term_and_fit_sixteen_bits(terms: int) -> None:
    rng = np.random.default_rng(terms)
    per_code = (rng.random(terms) * 5 + 1e-3).tolist()
    weights, unit = code_weights(per_code)
    assert np.all(weights.astype(np.float64) * unit >= np.asarray(per_code) * (1 - 1e-12))
    assert int(weights.astype(np.int64).sum()) * CODE_MAX <= np.iinfo(np.uint16).max
    codes = [np.full(10, CODE_MAX, dtype=np.uint8) for _ in range(terms)]
    total = sum_codes(codes, weights, 10)
    assert int(total[0]) == int(weights.astype(np.int64).sum()) * CODE_MAX  # no wrap-around
    with pytest.raises(ValueError):
        code_weights([1.0] * 258)
    with pytest.raises(ValueError):
        code_weights([1.0, 0.0])


def test_sample_level_is_exact_on_small_arrays_and_close_on_large_ones() -> None:
    rng = np.random.default_rng(2)
    small = rng.random(1000).astype(np.float32)
    assert sample_level(small, 10) == float(np.sort(small)[-10])
    large = rng.random(1_000_000).astype(np.float32)
    level = sample_level(large, 400)
    assert 100 <= int((large >= level).sum()) <= 1600
    assert sample_level(large, 0) == math.inf


def _random_corpus(rng: random.Random) -> list[str]:
    """Texts over a vocabulary of 2–400 words: with a small one, every word is in nearly
    every text (nothing to prune); duplicated texts make exact ties."""
    vocab = _VOCAB[: rng.choice([2, 3, 8, 23, 60, 400])]
    zipf = rng.random() < 0.5
    weights = [1.0 / (r + 1) if zipf else 1.0 for r in range(len(vocab))]
    texts = [
        " ".join(rng.choices(vocab, weights, k=rng.choice([1, 2, 5, 20, 70, 200])))
        for _ in range(rng.randint(50, 900))
    ]
    for _ in range(rng.randint(0, 30)):  # exact duplicates: ties broken by seq
        texts.insert(rng.randrange(len(texts)), rng.choice(texts))
    return texts


def _plain_scores(texts: list[str], live: list[bool], query: str) -> dict[int, float]:
    """BM25 by its formula, float64, over the live texts: ``{seq: score}`` of the matches."""
    tokens = [tokenize(t) for t in texts]
    n = sum(live)
    avgdl = sum(len(t) for t, a in zip(tokens, live, strict=True) if a) / n
    words = set(tokenize(query))
    df = Counter(w for t, a in zip(tokens, live, strict=True) if a for w in set(t) & words)
    out = {}
    for i, (doc, alive) in enumerate(zip(tokens, live, strict=True)):
        tf = Counter(w for w in doc if w in words)
        if not alive or not tf:
            continue
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / avgdl)
        out[i + 1] = sum(idf(n, df[w]) * c / (c + norm) for w, c in tf.items())
    return out


def _check(index: BM25Index, plain: dict[int, float], query: str, k: int) -> None:
    """The bounded search equals reading every posting bit for bit, and the formula."""
    seqs, scores = index.search(query, k)
    full_seqs, full_scores = index.search(query, k, prune=False)
    assert seqs.tolist() == full_seqs.tolist(), (query, k)
    assert scores.tobytes() == full_scores.tobytes(), (query, k)
    expect = sorted(plain.values(), reverse=True)[:k]
    assert len(seqs) == len(expect), (query, k)
    np.testing.assert_allclose(scores, expect, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(scores, [plain[s] for s in seqs.tolist()], rtol=2e-5, atol=1e-6)
    kth = expect[-1] if expect else 0.0
    missed = [s for s, v in plain.items() if v > kth * (1 + 1e-4) and s not in set(seqs)]
    assert not missed, (query, k)


@pytest.mark.parametrize("seed", range(24))
def test_bounded_bm25_equals_the_formula_on_random_corpora(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random corpora (all-common-word ones included), queries, ``k``, deletions, an
    unmerged tail; the level sampled from few documents (so its guess is often wrong and
    the exact fallback runs)."""
    rng = random.Random(seed)
    monkeypatch.setattr(maxscore, "_DENSE_MIN_DOCS", 0)
    monkeypatch.setattr(maxscore, "_CHECK_POSTINGS", rng.choice([0, 100, 10**9]))
    monkeypatch.setattr(maxscore, "_SAMPLE_SIZE", rng.choice([8, 64, 32_768]))
    bounded = _spied(monkeypatch, "_bounded")
    texts = _random_corpus(rng)
    index = BM25Index()
    index.add(
        list(range(1, len(texts) + 1)),
        [f"r{i}" for i in range(len(texts))],
        texts,
        [1] * len(texts),
        [NO_DATE] * len(texts),
    )
    index.merge()
    top_df = Counter(w for t in texts for w in set(tokenize(t))).most_common(1)[0][1]
    dense = top_df * maxscore._DENSE_SHARE >= len(texts)  # a word common enough to be read as bytes
    live = [True] * len(texts)
    if seed % 3 == 0:  # deletions: live df, dead documents skipped
        for s in range(1, len(texts) + 1, rng.randint(2, 9)):
            live[s - 1] = False
        index.remove([s for s in range(1, len(texts) + 1) if not live[s - 1]])
    if seed % 2 == 0:  # an unmerged tail, and a larger or smaller avgdl than the codes'
        extra = _random_corpus(rng)[:40]
        start = len(texts) + 1
        index.add(
            list(range(start, start + len(extra))),
            [f"x{i}" for i in range(len(extra))],
            extra,
            [1] * len(extra),
            [NO_DATE] * len(extra),
        )
        texts, live = texts + extra, live + [True] * len(extra)
        assert index._tail
    counts = Counter(w for t in texts for w in set(tokenize(t)))
    vocab, common = sorted(counts), [w for w, _ in counts.most_common(6)]
    for i in range(12):
        pool = common if i % 2 else [*vocab, "zzzunseen"]  # every other one: common words
        query = " ".join(rng.choices(pool, k=rng.randint(1, 9)))
        plain = _plain_scores(texts, live, query)
        for k in (1, 7, 100, len(texts)):
            _check(index, plain, query, k)
    assert len(bounded) > 0 or not dense


def _spied(monkeypatch: pytest.MonkeyPatch, *names: str) -> list[str]:
    """The names of these ``BM25Index`` methods, in the order a search calls them."""
    calls: list[str] = []
    for name in names:
        original = getattr(BM25Index, name)
        monkeypatch.setattr(
            BM25Index,
            name,
            lambda self, *a, _f=original, _n=name: calls.append(_n) or _f(self, *a),
        )
    return calls


def test_all_common_word_corpus_at_scale_takes_the_bounded_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20,000 texts of 70 words from 23 (the growth benchmark's narrow corpus): every
    query word is in nearly every text; the default sample size guesses the level."""
    rng = random.Random(5)
    words = _VOCAB[:23]
    texts = [" ".join(rng.choice(words) for _ in range(70)) for _ in range(20_000)]
    index = BM25Index()
    index.add(
        list(range(1, 20_001)),
        [f"r{i}" for i in range(20_000)],
        texts,
        [1] * 20_000,
        [NO_DATE] * 20_000,
    )
    index.merge()
    monkeypatch.setattr(maxscore, "_SAMPLE_SIZE", 2048)  # strided guesses, as at 1M
    calls = _spied(monkeypatch, "_bounded", "_bounded_codes")
    live = [True] * len(texts)
    queries = [" ".join(rng.sample(words, rng.randint(3, 8))) for _ in range(6)]
    for query in queries:
        plain = _plain_scores(texts, live, query)
        for k in (20, 100):
            _check(index, plain, query, k)
    # no other term and no tail: the bound stays in integers
    assert calls.count("_bounded") == calls.count("_bounded_codes") == 12
    extra = [" ".join(rng.choice(words) for _ in range(70)) for _ in range(300)]
    index.add(
        list(range(20_001, 20_301)), [f"x{i}" for i in range(300)], extra, [1] * 300, [0] * 300
    )
    assert index._tail
    texts, live, calls[:] = texts + extra, live + [True] * 300, []
    for query in queries:  # tail postings: bytes of their own, still in integers
        _check(index, _plain_scores(texts, live, query), query, 100)
    assert calls.count("_bounded") == calls.count("_bounded_codes") == 6
    assert index._tail_dense  # kept, and extended as the tail grows
    more = [" ".join(rng.choice(words) for _ in range(70)) for _ in range(50)]
    index.add(list(range(20_301, 20_351)), [f"y{i}" for i in range(50)], more, [1] * 50, [0] * 50)
    texts, live = texts + more, live + [True] * 50
    for query in queries:
        _check(index, _plain_scores(texts, live, query), query, 100)
    rare = "w400q " + queries[0]  # a term outside the codes first: the float bound
    index.add([20_351], ["z"], ["w400q w400q"], [1], [0])
    texts, live = [*texts, "w400q w400q"], [*live, True]
    calls[:] = []
    _check(index, _plain_scores(texts, live, rare), rare, 100)
    assert calls.count("_bounded") == 1 and "_bounded_codes" not in calls


def test_a_rare_word_beside_common_ones_bounds_the_common_ones_from_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The growth benchmark's common-word questions: one rare word and words each in about
    one text in ten. The check before the first common word cannot prune (the common words
    together outscore the rare one), so the common words are read as bytes instead of
    being added posting by posting and looked up for every candidate; the same ranking."""
    monkeypatch.setattr(maxscore, "_CHECK_POSTINGS", 100)  # a check before each common word
    rng = random.Random(11)
    common, filler = _VOCAB[:5], _VOCAB[5:300]
    texts = []
    for i in range(8_000):
        words = rng.choices(filler, k=30) + [w for w in common if rng.random() < 0.1]
        texts.append(" ".join(words + (["w399q"] if i % 97 == 0 else [])))
    index = BM25Index()
    index.add(
        list(range(1, 8_001)), [f"r{i}" for i in range(8_000)], texts, [1] * 8_000, [0] * 8_000
    )
    index.merge()
    calls = _spied(monkeypatch, "_bounded", "_refine")
    live = [True] * len(texts)
    for query in ("w399q " + " ".join(common), "w399q w0q w2q w4q"):
        for k in (5, 20, 100):
            _check(index, _plain_scores(texts, live, query), query, k)
    assert calls == ["_bounded"] * 6


def test_words_in_one_record_in_twenty_are_bytes_only_when_their_postings_are_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Words each in about one text in 24 (below ``_DENSE_SHARE``, above
    ``_DENSE_SHARE_MANY``) beside a rare one: read as bytes once their postings reach
    ``_DENSE_MANY_POSTINGS`` (lowered here from its million-record size), added posting by
    posting below it; the same ranking both ways."""
    rng = random.Random(13)
    common, filler = _VOCAB[:4], _VOCAB[4:300]
    texts = []
    for i in range(12_000):
        words = rng.choices(filler, k=30) + [w for w in common if rng.random() < 1 / 24]
        texts.append(" ".join(words + (["w399q"] if i % 211 == 0 else [])))
    index = BM25Index()
    index.add(
        list(range(1, 12_001)), [f"r{i}" for i in range(12_000)], texts, [1] * 12_000, [0] * 12_000
    )
    index.merge()
    sizes = [index._live_df(index._vocab[w], index._parts(index._vocab[w])) for w in common]
    assert all(
        12_000 / maxscore._DENSE_SHARE > n >= 12_000 / maxscore._DENSE_SHARE_MANY for n in sizes
    )
    calls = _spied(monkeypatch, "_bounded")
    live = [True] * len(texts)
    query = "w399q " + " ".join(common)
    plain = _plain_scores(texts, live, query)
    for k in (5, 100):
        _check(index, plain, query, k)
    assert calls == []  # few postings: added one by one
    monkeypatch.setattr(maxscore, "_DENSE_MANY_POSTINGS", min(sizes))
    for k in (5, 100):
        _check(index, plain, query, k)
    assert calls == ["_bounded"] * 2


def test_bounds_rounded_down_lose_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: codes rounded down (no longer upper bounds) make the bounded
    search miss documents, and the comparison above fails."""
    monkeypatch.setattr(maxscore, "_DENSE_MIN_DOCS", 0)

    def floored(docs: np.ndarray, impacts: np.ndarray, n: int) -> tuple[np.ndarray, float]:
        codes, top = impact_codes(docs, impacts, n)
        codes[docs] = np.maximum(codes[docs] // 2, 1)
        return codes, top

    monkeypatch.setattr(maxscore, "impact_codes", floored)
    rng = random.Random(9)
    words = _VOCAB[:23]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 70))) for _ in range(3000)]
    index = BM25Index()
    index.add(list(range(1, 3001)), [f"r{i}" for i in range(3000)], texts, [1] * 3000, [0] * 3000)
    index.merge()
    with pytest.raises(AssertionError):
        for _ in range(20):
            query = " ".join(rng.sample(words, rng.randint(3, 8)))
            _check(index, _plain_scores(texts, [True] * 3000, query), query, 50)
