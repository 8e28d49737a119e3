"""Tests of the incremental BM25 index and its tokenizer."""

from __future__ import annotations

import json
import random
import sys
import types
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _search_fakes import HashEmbeddings

import mnemon_langgraph.search._maxscore as bm25_module
import mnemon_langgraph.search._text as text
from mnemon_langgraph.search._bm25 import NO_DATE, STOPWORDS, BM25Index, IndexFileError, tokenize
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

_WORDS_TEXT = (
    "adoption agency painting pottery camping beach lake dog beagle sock rotterdam leeds "
    "nurse wedding sister guitar concert marathon running book library coffee tea garden "
    "flower sunset mountain hiking cookies bread recipe vegetarian fish"
)
_WORDS = _WORDS_TEXT.split()


def _corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        "Speaker: " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14)))
        for _ in range(n)
    ]


def _index(texts: list[str], *, start: int = 1) -> BM25Index:
    index = BM25Index()
    index.add(
        list(range(start, start + len(texts))),
        [f"r{i}" for i in range(start, start + len(texts))],
        texts,
        [1] * len(texts),
        [NO_DATE] * len(texts),
    )
    return index


def test_tokenize_lowercases_stems_and_drops_stopwords() -> None:
    assert tokenize("The Dog's SOCKS, and I were in Rotterdam in 2023!") == [
        "dog",
        "sock",
        "rotterdam",
        "2023",
    ]
    assert "the" in STOPWORDS and "not" not in STOPWORDS
    assert tokenize("") == []
    assert tokenize("Ünïcode wörds") == ["ünïcode", "wörd"]
    assert tokenize is text.terms  # the one tokenizer, not a copy


def test_ranking_equals_bm25s_on_same_tokens() -> None:
    bm25s = pytest.importorskip("bm25s")
    texts = _corpus(300, seed=1)
    ours = _index(texts)
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index([tokenize(t) for t in texts], show_progress=False)
    for query in ("beagle sock", "adoption agency painting", "marathon coffee lake", "tea"):
        seqs, scores = ours.search(query, 300)
        assert len(seqs) > 0
        ref_scores = ref.get_scores(sorted(set(tokenize(query))))
        got = np.zeros(len(texts))
        got[seqs - 1] = scores
        np.testing.assert_allclose(got, ref_scores, rtol=1e-4, atol=1e-5)


def test_no_match_returns_nothing() -> None:
    index = _index(_corpus(20))
    seqs, _ = index.search("zebra xylophone", 5)
    assert len(seqs) == 0
    seqs, _ = index.search("the and of", 5)  # stopwords only
    assert len(seqs) == 0


def test_incremental_adds_equal_one_build() -> None:
    texts = _corpus(5000, seed=2)
    whole = _index(texts)
    parts = BM25Index()
    for start in range(0, 5000, 37):  # many small adds, crossing the merge threshold
        chunk = texts[start : start + 37]
        parts.add(
            list(range(start + 1, start + 1 + len(chunk))),
            [f"r{i}" for i in range(start + 1, start + 1 + len(chunk))],
            chunk,
            [1] * len(chunk),
            [NO_DATE] * len(chunk),
        )
    assert parts._tail_docs < 5000  # merges happened
    for query in ("beagle sock", "rotterdam nurse wedding", "fish"):
        a_seqs, a_scores = whole.search(query, 50)
        b_seqs, b_scores = parts.search(query, 50)
        assert a_seqs.tolist() == b_seqs.tolist()
        np.testing.assert_allclose(a_scores, b_scores, rtol=1e-6)


def test_bulk_adds_equal_adds_one_batch_at_a_time() -> None:
    """``add(bulk=True)`` (one merge) builds the index that ``add`` in batches builds: same
    rankings, scores, counts and filters, also after a tail of small adds and deletions on
    top of it, and with the tail not empty when the bulk comes."""
    texts = _corpus(3000, seed=4)
    sessions = [1 + i % 5 for i in range(3000)]
    dates = [NO_DATE if i % 7 == 0 else 86_400 * i for i in range(3000)]

    def build(bulk: bool) -> BM25Index:
        index = BM25Index()
        index.add([1, 2, 3], ["r1", "r2", "r3"], texts[:3], sessions[:3], dates[:3])  # a tail
        for start in range(3, 3000, 1000):
            end = min(start + 1000, 2990)
            args = (
                list(range(start + 1, end + 1)),
                [f"r{i}" for i in range(start + 1, end + 1)],
                texts[start:end],
                sessions[start:end],
                dates[start:end],
            )
            index.add(*args, bulk=bulk)
        index.add(  # small adds after the bulk
            list(range(2991, 3001)),
            [f"r{i}" for i in range(2991, 3001)],
            texts[2990:],
            sessions[2990:],
            dates[2990:],
        )
        index.remove(range(100, 3000, 97))
        return index

    batched, bulk = build(False), build(True)
    assert len(bulk) == len(batched) == 3000 - len(range(100, 3000, 97))
    assert bulk.document_frequencies(["beagle", "fish", "zzz"]) == batched.document_frequencies(
        ["beagle", "fish", "zzz"]
    )
    mask_args = {"session_from": 2, "session_to": 3, "date_from": 86_400 * 50}
    compared = 0
    for query in ("beagle sock", "rotterdam nurse wedding", "fish", "speaker"):
        for mask in (None, "filtered"):
            a = batched.search(
                query, 40, mask=None if mask is None else batched.allowed_mask(**mask_args)
            )
            b = bulk.search(
                query, 40, mask=None if mask is None else bulk.allowed_mask(**mask_args)
            )
            assert len(a[0]) == 40 and a[0].tolist() == b[0].tolist()
            np.testing.assert_allclose(a[1], b[1], rtol=1e-6)
            compared += 1
    assert compared == 8


def test_delete_equals_rebuild_without_the_documents() -> None:
    texts = _corpus(400, seed=3)
    index = _index(texts)
    gone = set(range(1, 401, 3))
    assert index.remove(gone) == len(gone)
    assert index.remove(gone) == 0  # already gone
    kept = [(i + 1, t) for i, t in enumerate(texts) if i + 1 not in gone]
    fresh = BM25Index()
    fresh.add(
        [s for s, _ in kept],
        [f"r{s}" for s, _ in kept],
        [t for _, t in kept],
        [1] * len(kept),
        [NO_DATE] * len(kept),
    )
    for query in ("beagle sock", "garden flower sunset"):
        a_seqs, a_scores = index.search(query, 100)
        b_seqs, b_scores = fresh.search(query, 100)
        assert len(a_seqs) > 0
        assert not set(a_seqs.tolist()) & gone
        assert a_seqs.tolist() == b_seqs.tolist()
        np.testing.assert_allclose(a_scores, b_scores, rtol=1e-6)
    index.merge(compact=True)
    assert len(index) == len(kept)
    assert index.search("beagle", 100)[0].tolist() == fresh.search("beagle", 100)[0].tolist()


def test_compaction_forgets_words_of_deleted_documents() -> None:
    index = _index(["Ada: my secret word is zanzibarian", "Ada: hello dog"])
    assert index.remove([1]) == 1
    index.merge(compact=True)
    assert "zanzibarian" not in index._vocab
    assert len(index.search("zanzibarian", 5)[0]) == 0
    assert index.search("dog", 5)[0].tolist() == [2]


def test_mask_filters_inside_ranking() -> None:
    index = BM25Index()
    index.add(
        [1, 2, 3, 4],
        ["a", "b", "c", "d"],
        ["dog dog dog", "dog", "dog cat", "cat"],
        [1, 1, 2, 3],
        [100, 200, NO_DATE, 400],
    )
    mask = index.allowed_mask(session_from=2)
    assert index.search("dog", 10, mask=mask)[0].tolist() == [3]
    mask = index.allowed_mask(date_from=150)
    assert index.search("dog cat", 10, mask=mask)[0].tolist() == [4, 2]
    assert index.seqs_for(mask).tolist() == [2, 4]
    assert index.ids_for([4, 99, 2]) == ["d", "b"]
    assert index.ids_for([0, 3, 99, 1, 3]) == ["c", "a", "c"]  # unknown skipped, order kept
    assert index.ids_for([]) == []


def test_add_rejects_out_of_order_seqs() -> None:
    index = _index(["dog"], start=5)
    with pytest.raises(ValueError):
        index.add([5], ["x"], ["cat"], [1], [NO_DATE])


def test_save_load_roundtrip_and_corruption(tmp_path: Path) -> None:
    index = _index(_corpus(100, seed=4))
    index.remove([3, 4])
    path = tmp_path / "bm25.npz"
    index.save(path, {"max_seq": 100, "generation": 7})
    loaded, meta = BM25Index.load(path)
    assert meta["generation"] == 7 and meta["max_seq"] == 100
    assert len(loaded) == 98
    for query in ("beagle", "lake coffee"):
        assert loaded.search(query, 20)[0].tolist() == index.search(query, 20)[0].tolist()
    assert not list(tmp_path.glob(".bm25-*"))  # no temporary file left behind
    path.write_bytes(b"garbage")
    with pytest.raises(IndexFileError):
        BM25Index.load(path)
    with pytest.raises(IndexFileError):
        BM25Index.load(tmp_path / "missing.npz")


def _rewrite_meta(path: Path, **changes: object) -> None:
    """Rewrite an index file's stored meta, as another tokenizer version would have saved it."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {key: z[key] for key in z.files}
    info = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    info.update(changes)
    arrays["meta"] = np.frombuffer(json.dumps(info).encode("utf-8"), dtype=np.uint8)
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


def test_index_built_by_another_tokenizer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bm25.npz"
    _index(_corpus(30, seed=5)).save(path, {"max_seq": 30})
    loaded, meta = BM25Index.load(path)
    assert meta["tokenizer"] == text.tokenizer_id() and len(loaded) == 30
    _rewrite_meta(path, tokenizer="mnemon-text-0/pystemmer-english")
    with pytest.raises(IndexFileError, match="tokenizer"):
        BM25Index.load(path)
    _rewrite_meta(path, tokenizer=text.tokenizer_id(), format=1, stemmer=None)  # old format
    with pytest.raises(IndexFileError, match="format"):
        BM25Index.load(path)


def test_terms_do_not_depend_on_an_installed_pystemmer(monkeypatch: pytest.MonkeyPatch) -> None:
    sample = "Caroline went hiking with her studies group and adopted puppies"
    expected = tokenize(sample)
    ident = text.tokenizer_id()

    class _OtherStemmer:  # a PyStemmer stand-in that stems differently
        def __init__(self, language: str) -> None:
            self.language = language

        def stemWords(self, words: list[str]) -> list[str]:
            return [w[:3] for w in words]

        def stemWord(self, word: str) -> str:
            return word[:3]

    fake = types.ModuleType("Stemmer")
    fake.Stemmer = _OtherStemmer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "Stemmer", fake)
    text.stem.cache_clear()
    assert tokenize(sample) == expected
    assert text.tokenizer_id() == ident
    assert "hik" in expected and "study" in expected  # stemmed all the same


def test_store_rebuilds_an_index_built_by_another_tokenizer(tmp_path: Path) -> None:
    namespace = ("users", "renée")
    when = datetime(2024, 5, 1, 9, 0)
    messages = [
        Message(text=body, speaker="Renée", role="user", id=f"m{i}", timestamp=when, session=1)
        for i, body in enumerate(
            ["Ich bin nach Zürich gezogen", "Søren kommt am Freitag", "Hiking in the Alps"]
        )
    ]
    emb = HashEmbeddings()
    with MnemonStore(tmp_path / "j.db", emb) as store:
        store.ingest(namespace, messages, origin="chat", pack=False)
        folder = store.index(namespace).folder
    _rewrite_meta(folder / "bm25.npz", tokenizer="mnemon-text-0/none")
    with MnemonStore(tmp_path / "j.db", emb) as store:
        hits = store.search("zürich", namespace=namespace, k=3)
        assert store.index(namespace).rebuilds == 1
        assert hits and "Zürich" in hits[0].record.text
    _, meta = BM25Index.load(folder / "bm25.npz")
    assert meta["tokenizer"] == text.tokenizer_id()  # saved again by this tokenizer


def _zipf_corpus(n: int, seed: int) -> list[str]:
    """Texts over a Zipf-like vocabulary: a few words in most texts, many rare ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}x" for i in range(3000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(4, 30))) for _ in range(n)]


def _zipf_queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}x" for i in range(3000)]
    common = vocab[:12]
    return [
        " ".join(rng.sample(common, rng.randint(0, 6)) + rng.sample(vocab, rng.randint(1, 14)))
        for _ in range(count)
    ]


def _pruned_equals_full(index: BM25Index, queries: list[str], k: int, **kw: object) -> int:
    """Assert MaxScore's ranking equals scoring every posting; returns how many searches
    pruned: reached MaxScore's second phase (common terms looked up for candidates only) or
    bounded common terms from bytes (``_bounded``)."""
    refined = 0
    spied = {name: getattr(index, name) for name in ("_refine", "_bounded")}

    def spy(original: Any) -> Any:
        def counted(*args: object) -> np.ndarray:
            nonlocal refined
            refined += 1
            return original(*args)

        return counted

    for name, original in spied.items():
        setattr(index, name, spy(original))
    try:
        for query in queries:
            full_seqs, full_scores = index.search(query, k, prune=False, **kw)  # type: ignore[arg-type]
            seqs, scores = index.search(query, k, **kw)  # type: ignore[arg-type]
            assert len(full_seqs) > 0
            assert seqs.tolist() == full_seqs.tolist(), query
            assert scores.tobytes() == full_scores.tobytes(), query  # bit-identical
    finally:
        for name in spied:
            delattr(index, name)
    return refined


@pytest.mark.parametrize("check_postings", [0, 100, 1000])
def test_maxscore_ranks_exactly_like_reading_every_posting(
    check_postings: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the threshold is raised before terms this long (8,192 by default: a 1M-record index)
    monkeypatch.setattr(bm25_module, "_CHECK_POSTINGS", check_postings)
    texts = _zipf_corpus(6000, seed=5)
    index = _index(texts)
    queries = _zipf_queries(6, 80)
    for k in (1, 10, 100):
        refined = _pruned_equals_full(index, queries, k)
        assert refined >= len(queries) // 4, (k, refined)  # pruning really happened
    # deletions (live df, dead postings skipped), a filter mask, and an unmerged tail
    index.remove(range(1, 6001, 7))
    mask = index.allowed_mask(date_from=1_000)
    index.add([7000, 7001], ["x1", "x2"], [texts[3], texts[4]], [2, 2], [5_000, 6_000])
    assert index._tail
    assert _pruned_equals_full(index, queries, 20) > 0
    masked = index.allowed_mask(session_from=2)
    for query in queries[:20]:
        seqs, _ = index.search(query, 20, mask=masked)
        assert set(seqs.tolist()) <= {7000, 7001}
    del mask


def test_maxscore_comparison_detects_a_wrong_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: with bounds that are too small, pruning loses documents and the
    equality check above fails (so it can fail)."""
    index = _index(_zipf_corpus(6000, seed=5))
    original = BM25Index._term

    def shrunk(self: BM25Index, tid: int, n_live: int, avgdl: float) -> object:
        term = original(self, tid, n_live, avgdl)
        return None if term is None else term._replace(bound=term.bound * 0.2)

    monkeypatch.setattr(BM25Index, "_term", shrunk)
    monkeypatch.setattr(bm25_module, "_CHECK_POSTINGS", 100)
    with pytest.raises(AssertionError):
        _pruned_equals_full(index, _zipf_queries(6, 80), 100)


def test_loaded_index_with_unsorted_postings_is_refused(tmp_path: Path) -> None:
    index = _index(["dog cat", "dog", "dog bird"])
    index.merge()
    assert index._post_doc[:3].tolist() == [0, 1, 2]  # "dog" first: a sorted run
    index._post_doc = index._post_doc[::-1].copy()  # same values, wrong order
    index.save(tmp_path / "bm25.npz", {})
    with pytest.raises(IndexFileError, match="not sorted"):
        BM25Index.load(tmp_path / "bm25.npz")


def test_one_idf_is_bm25s_lucene_idf_and_every_user_reads_it() -> None:
    """The package writes BM25's IDF once (``search.formula``): it equals ``bm25s``' Lucene
    IDF, stays positive even for a term in every document, falls as ``df`` grows, and the
    judge's and the excerpts' weights are that function, not copies of it."""
    bm25s_scoring = pytest.importorskip("bm25s.scoring")
    from mnemon_langgraph.judges._features import Doc, idf_of_docs, idf_of_memory
    from mnemon_langgraph.read._excerpts import focus_weights
    from mnemon_langgraph.search._formula import idf

    for n in (1, 2, 7, 1000):
        values = [idf(n, df) for df in range(n + 1)]
        assert values == [bm25s_scoring._score_idf_lucene(df, n) for df in range(n + 1)]
        assert all(v > 0 for v in values)
        assert values == sorted(values, reverse=True) and len(set(values)) == len(values)

    lines = ["paris trip in june", "a trip to rome", "the cat sleeps"]
    assert focus_weights(["trip to paris?"], lines) == {"trip": idf(3, 2), "pari": idf(3, 1)}
    docs = [Doc({"id": str(i), "text": f"Sam: {line}"}, i) for i, line in enumerate(lines)]
    got = idf_of_docs(docs)  # the judge counts one unseen document more (N + 1)
    assert got["trip"] == idf(4, 2) and got["cat"] == idf(4, 1) and got[""] == idf(4, 0)
    memory = idf_of_memory({"records": 10, "df": {"trip": 4}}, {"x": 1.0})
    assert memory == {"x": 1.0, "trip": idf(10, 4), "": idf(10, 0)}


def _common_word_corpus(n: int, seed: int) -> list[str]:
    """Every text draws 20–70 words from the same 23: every query word is in most texts."""
    rng = random.Random(seed)
    words = _WORDS[:23]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(20, 70))) for _ in range(n)]


def test_dense_common_terms_rank_exactly_like_reading_every_posting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Terms in most documents are bounded from one byte per document (not read posting by
    posting); the ranking and scores stay those of reading every posting, also after
    deletions, under a filter, with an unmerged tail and once ``avgdl`` changed (the codes
    kept, their bound scaled), and after a merge (the codes taken again)."""
    monkeypatch.setattr(bm25_module, "_DENSE_MIN_DOCS", 100)
    monkeypatch.setattr(bm25_module, "_CHECK_POSTINGS", 100)
    texts = _common_word_corpus(3000, seed=11)
    index = _index(texts)
    index.merge()
    bounded = 0
    original = BM25Index._bounded

    def spy(self: BM25Index, *args: object) -> np.ndarray:
        nonlocal bounded
        bounded += 1
        return original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(BM25Index, "_bounded", spy)
    rng = random.Random(3)
    queries = [" ".join(rng.sample(_WORDS[:23], rng.randint(3, 8))) for _ in range(40)]
    queries += ["beagle", "sock lake tea"]
    for k in (1, 20, 100):
        _pruned_equals_full(index, queries, k)
    assert bounded >= 3 * len(queries)  # the bounded path was taken
    assert len(index._dense) > 0
    kept = {tid: codes for tid, (codes, *_) in index._dense.items()}
    index.remove(range(1, 3001, 5))
    index.add([5000, 5001], ["x1", "x2"], [texts[3], texts[4]], [2, 2], [5_000, 6_000])
    assert index._tail
    _pruned_equals_full(index, queries, 20)
    assert any(index._dense[tid][0] is codes for tid, codes in kept.items() if tid in index._dense)
    mask = index.allowed_mask(date_from=1_000)
    for query in queries[:10]:
        seqs, _ = index.search(query, 20, mask=mask)
        assert set(seqs.tolist()) == {5000, 5001}
    index.merge()
    assert not index._dense  # a merge forgets the codes of the old main segment
    _pruned_equals_full(index, queries, 20)


def test_dense_common_terms_equal_bm25s(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dense path scores like ``bm25s`` (every document holds ``speaker``)."""
    bm25s = pytest.importorskip("bm25s")
    monkeypatch.setattr(bm25_module, "_DENSE_MIN_DOCS", 0)
    texts = _corpus(300, seed=1)
    ours = _index(texts)
    ours.merge()  # the dense path covers the main segment
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index([tokenize(t) for t in texts], show_progress=False)
    for query in ("speaker beagle sock", "speaker tea", "speaker"):
        seqs, scores = ours.search(query, 300)
        assert len(seqs) == 300 and ours._dense
        got = np.zeros(len(texts))
        got[seqs - 1] = scores
        np.testing.assert_allclose(got, ref.get_scores(sorted(set(tokenize(query)))), rtol=1e-4)


def test_a_filter_of_few_documents_ranks_like_reading_every_posting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A filter that keeps one session of many (a read's look around one record) scores the
    allowed documents directly; rankings and scores equal reading every posting, bit for bit,
    with deletions and an unmerged tail, and documents without a query term stay out."""
    texts = _zipf_corpus(6000, seed=11)
    index = BM25Index()
    index.add(
        list(range(1, 6001)),
        [f"r{i}" for i in range(1, 6001)],
        texts,
        [1 + i // 60 for i in range(6000)],  # 100 sessions of 60 records
        [NO_DATE] * 6000,
    )
    index.remove(range(1, 6001, 9))
    index.add([7000, 7001], ["x1", "x2"], [texts[3], texts[4]], [42, 42], [NO_DATE] * 2)
    assert index._tail
    queries = _zipf_queries(7, 40)
    direct = 0
    original = BM25Index._few_allowed

    def spy(self: BM25Index, *args: object) -> object:
        nonlocal direct
        found = original(self, *args)  # type: ignore[arg-type]
        direct += found is not None
        return found

    monkeypatch.setattr(BM25Index, "_few_allowed", spy)
    for session in (1, 42, 99):
        mask = index.allowed_mask(session_from=session, session_to=session)
        for k in (1, 10, 100):
            for query in queries:
                full_seqs, full_scores = index.search(query, k, mask=mask, prune=False)
                seqs, scores = index.search(query, k, mask=mask)
                assert seqs.tolist() == full_seqs.tolist(), (session, k, query)
                assert scores.tobytes() == full_scores.tobytes(), (session, k, query)
                assert set(seqs.tolist()) <= set(index.seqs_for(mask).tolist())
    assert direct > len(queries)  # the direct scoring really ran
    assert index.search("w0x", 100, mask=index.allowed_mask(session_from=42, session_to=42))[
        0
    ].size  # a common word is found in the session
