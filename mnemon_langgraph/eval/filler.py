"""Filler history: other conversations around an evaluated one, up to a token budget.

A memory that has talked with one person daily for two years holds about ten million tokens;
the benchmarks' conversations hold 100K–1M. :func:`build_history` puts an evaluated
conversation inside a longer life made of **other** public conversations (the *filler*), so
its questions can be asked in a namespace of the stated size. The rules, all deterministic
for a seed, so anyone can rebuild the same history from the public files:

* **Pool** (:func:`load_filler_pool`): every conversation under the ``--filler`` paths —
  LongMemEval files (each haystack session is a thread of one session), BEAM ``chat.json``
  files (a conversation is a thread of its batches, in order) and LoCoMo files (a
  conversation is a thread of its sessions, in order). Files are read in sorted path order.
  Only raw turns are read: no question, answer, evidence label (``has_answer``,
  ``answer_session_ids``, ``source_chat_ids``) or dataset annotation (LoCoMo summaries,
  observations, events) ever reaches a filler message.
* **No text repeated**: a message's *content hash* is the SHA-256 of its text with runs of
  whitespace collapsed to one space. A message whose hash was seen before (in an earlier
  file or session) is dropped; a session left with no message is dropped. LongMemEval's
  recurring sessions therefore appear once.
* **The evaluated conversation left out by content**: a filler session holding any message
  whose hash is one of the evaluated conversation's is dropped whole — whatever its id or
  file, so a copy of the evaluated conversation in the filler (BEAM dev as filler of BEAM
  dev, a LongMemEval question's own sessions in the other questions' haystacks) never
  enters.
* **Tokens** are counted with the bundled WordPiece tokenizer (:class:`~.report.TokenCounter`,
  the MiniLM tokenizer shipped in ``mnemon_langgraph/data``), per message text, no special
  tokens. The history's tokens are the evaluated conversation's plus the filler's, at most
  the budget.
* **Choice**: the threads are shuffled once with ``random.Random(seed)`` (the same order for
  every evaluated conversation, so a smaller history's filler is, apart from the sessions a
  conversation excludes, the start of a larger one's); sessions are taken thread by thread,
  in thread order, each one that still fits the budget (one that does not is skipped).
* **Dates**, the way a long life would be: the taken sessions, in the order taken, are laid
  out backwards in time from the evaluated conversation's last date at a constant rate of
  ``tokens_per_day`` (default 14,000: ten million tokens in about two years). Each session's
  day is where its place in that sequence falls (so the filler is dated before the
  conversation and, over the conversation's own span, interleaved with its sessions), at a
  seeded time of day; a thread's sessions keep their order. No filler is dated after the
  conversation's last date. An undated conversation is taken to end on 2024-01-01.
* **Sessions and ids**: every session of the history (the conversation's and the filler's)
  is renumbered 1.. in date order; the conversation's messages keep their ids (the
  benchmark's evidence names them), a filler message's id is
  ``filler:<first 16 hex of its session's hash>:<n>``.

With the dev files as filler, most of it is other LongMemEval "users" (ShareGPT/UltraChat-
style sessions and LongMemEval's simulated users), not one person's life; the results say
so (docs/results/ten-million.md has the make-up).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.report import TokenCounter
from mnemon_langgraph.types import Message

__all__ = [
    "DEFAULT_TOKENS_PER_DAY",
    "FillerPool",
    "FillerSession",
    "History",
    "build_history",
    "content_hash",
    "load_filler_pool",
    "parse_token_count",
]

DEFAULT_TOKENS_PER_DAY = 14_000
"""Filler tokens per day of the simulated life (10M tokens in about two years)."""

_UNDATED_END = datetime(2024, 1, 1)
_SNIFF_BYTES = 1 << 20


def content_hash(text: str) -> str:
    """SHA-256 (hex) of ``text`` with whitespace runs collapsed: the no-repeat key."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()


def parse_token_count(text: str) -> int:
    """``"10M"``, ``"1.5M"``, ``"100K"``, ``"250000"`` → tokens.

    Raises:
        InputError: Not a positive number with an optional K/M/G suffix.
    """
    raw = text.strip().upper().replace("_", "").replace(",", "")
    scale = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    try:
        value = float(number)
    except ValueError as exc:
        raise InputError(f"a token count is N, NK or NM (e.g. 10M), got {text!r}") from exc
    if value <= 0 or value * scale < 1:
        raise InputError(f"a token count must be positive, got {text!r}")
    return int(value * scale)


@dataclass(frozen=True)
class FillerSession:
    """One session of filler, its messages already free of repeated text.

    Attributes:
        thread: The conversation it belongs to (``longmemeval:<session id>``,
            ``beam:<tier>/<n>``, ``locomo:<id>``).
        key: SHA-256 (hex) of its messages' content hashes, in order.
        messages: Its messages as the source loader made them (ids, dates and session
            numbers are replaced when it is placed in a history).
        hashes: Content hash of each message.
        tokens: WordPiece tokens of its messages' texts.
    """

    thread: str
    key: str
    messages: tuple[Message, ...]
    hashes: tuple[str, ...]
    tokens: int

    @property
    def source(self) -> str:
        """The dataset it came from (``longmemeval``, ``beam``, ``locomo``)."""
        return self.thread.partition(":")[0]


@dataclass
class FillerPool:
    """Every filler session, grouped in threads, in load order.

    Attributes:
        threads: ``(thread name, its sessions in order)`` per thread.
        token_method: How tokens were counted (``wordpiece`` unless the tokenizer is missing).
        dropped_repeats: Messages dropped because their text was seen before.
    """

    threads: list[tuple[str, list[FillerSession]]]
    token_method: str
    dropped_repeats: int = 0

    def tokens_by_source(self) -> dict[str, int]:
        """Distinct tokens the pool holds, per dataset."""
        out: dict[str, int] = {}
        for _, sessions in self.threads:
            for s in sessions:
                out[s.source] = out.get(s.source, 0) + s.tokens
        return out

    def sessions(self) -> Iterator[FillerSession]:
        """Every session, thread by thread."""
        for _, sessions in self.threads:
            yield from sessions


# -- loading -----------------------------------------------------------------------------


def _json_files(paths: Sequence[str | Path]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.json") if f.name != "probing_questions.json")
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(f"filler source not found: {p}")
    return list(dict.fromkeys(files))


def _sessions_of(messages: Iterable[Message]) -> list[list[Message]]:
    """Messages grouped by session number, sessions in first-seen order."""
    groups: dict[int | None, list[Message]] = {}
    for m in messages:
        groups.setdefault(m.session, []).append(m)
    return list(groups.values())


def _longmemeval_threads(path: Path) -> Iterator[tuple[str, list[list[Message]]]]:
    from mnemon_langgraph.loaders.longmemeval import iter_longmemeval, parse_question, session_of

    for i, raw in iter_longmemeval(path):
        q = parse_question(raw, where=f"{path} question {i}")
        for session in _sessions_of(q.messages):
            sid = session_of(str(session[0].id))
            yield f"longmemeval:{sid}", [session]


def _beam_threads(path: Path) -> Iterator[tuple[str, list[list[Message]]]]:
    from mnemon_langgraph.eval.beam import load_beam_chat

    name = f"{path.parent.parent.name}/{path.parent.name}"
    yield f"beam:{name}", _sessions_of(load_beam_chat(path))


def _locomo_threads(data: Any, path: Path) -> Iterator[tuple[str, list[list[Message]]]]:
    from mnemon_langgraph.loaders.locomo import load_locomo

    for conv in load_locomo(data):
        yield f"locomo:{conv.id or path.stem}", _sessions_of(conv.messages)


def _threads_of(path: Path) -> Iterator[tuple[str, list[list[Message]]]]:
    """Raw threads of one file, by its format."""
    from mnemon_langgraph.loaders.locomo import is_locomo

    if path.name == "chat.json":
        yield from _beam_threads(path)
        return
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if b'"haystack_sessions"' in head:
        yield from _longmemeval_threads(path)
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"filler file {path} is not JSON: {exc}") from exc
    if is_locomo(data):
        yield from _locomo_threads(data, path)
        return
    raise InputError(
        f"filler file {path} is not a BEAM chat.json, a LongMemEval file or a LoCoMo file"
    )


def load_filler_pool(paths: Sequence[str | Path], tokens: TokenCounter | None = None) -> FillerPool:
    """Every distinct session of the filler sources (see the module docstring for the rules).

    Raises:
        InputError: A missing path, a file of no known format, or a malformed file.
    """
    counter = tokens or TokenCounter()
    seen: set[str] = set()
    threads: list[tuple[str, list[FillerSession]]] = []
    dropped = 0
    names: set[str] = set()
    for path in _json_files(paths):
        for name, raw_sessions in _threads_of(path):
            sessions: list[FillerSession] = []
            for raw in raw_sessions:
                kept, hashes = [], []
                for m in raw:
                    h = content_hash(m.text)
                    if h in seen:
                        dropped += 1
                        continue
                    seen.add(h)
                    kept.append(m)
                    hashes.append(h)
                if kept:
                    key = hashlib.sha256("".join(hashes).encode()).hexdigest()
                    count = sum(counter.count(m.text) for m in kept)
                    sessions.append(FillerSession(name, key, tuple(kept), tuple(hashes), count))
            if sessions:
                unique = name if name not in names else f"{name}#{len(names)}"
                names.add(unique)
                threads.append((unique, sessions))
    return FillerPool(threads, counter.method, dropped)


# -- one history ----------------------------------------------------------------------------


@dataclass
class History:
    """An evaluated conversation inside its filler, ready to ingest.

    Attributes:
        messages: Every message, in date order, sessions renumbered 1.. in date order.
        budget: The token budget asked for.
        own_tokens: Tokens of the evaluated conversation.
        filler_tokens: Tokens of the filler taken.
        filler_sessions: Filler sessions taken.
        filler_by_source: Filler tokens per dataset.
        excluded_sessions: Pool sessions left out because they share text with the
            evaluated conversation.
        first_date: The earliest date of the history.
        seed: The seed.
    """

    messages: list[Message]
    budget: int
    own_tokens: int
    filler_tokens: int = 0
    filler_sessions: int = 0
    filler_by_source: dict[str, int] = field(default_factory=dict)
    excluded_sessions: int = 0
    first_date: datetime | None = None
    seed: int = 0

    @property
    def tokens(self) -> int:
        """The history's tokens (conversation and filler)."""
        return self.own_tokens + self.filler_tokens

    def info(self) -> dict[str, Any]:
        """What a result row records about the history."""
        return {
            "history_budget": self.budget,
            "history_tokens": self.tokens,
            "own_tokens": self.own_tokens,
            "filler_tokens": self.filler_tokens,
            "filler_sessions": self.filler_sessions,
            "filler_by_source": dict(self.filler_by_source),
            "filler_excluded_sessions": self.excluded_sessions,
            "history_first_date": self.first_date.isoformat() if self.first_date else None,
            "filler_seed": self.seed,
        }


def _shuffled_threads(pool: FillerPool, seed: int) -> list[list[FillerSession]]:
    order = [sessions for _, sessions in pool.threads]
    random.Random(seed).shuffle(order)
    return order


def _choose(
    pool: FillerPool, own_hashes: set[str], room: int, seed: int
) -> tuple[list[FillerSession], int]:
    """Sessions that fit ``room`` tokens, in the seeded order; and how many were excluded."""
    taken: list[FillerSession] = []
    excluded = 0
    for thread in _shuffled_threads(pool, seed):
        if room <= 0:
            break
        for s in thread:
            if own_hashes.intersection(s.hashes):
                excluded += 1
            elif s.tokens <= room:
                taken.append(s)
                room -= s.tokens
    return taken, excluded


def _filler_dates(
    taken: Sequence[FillerSession], end: datetime, tokens_per_day: int, seed: int
) -> list[datetime]:
    """A date per taken session: laid out backwards from ``end`` at ``tokens_per_day``.

    The first session taken is the most recent; a thread's sessions keep their order (a
    later session of a thread is never dated before an earlier one).
    """
    rng = random.Random(f"{seed}:dates")
    out: list[datetime] = []
    before = 0
    for s in taken:
        before += s.tokens
        day = datetime.combine(end.date(), datetime.min.time()) - timedelta(
            days=before // tokens_per_day
        )
        out.append(min(end, day + timedelta(seconds=rng.randrange(8 * 3600, 23 * 3600))))
    # a thread's sessions are taken in order but laid out backwards: give them its dates
    # in ascending order, so an earlier session of a thread is never dated after a later one
    by_thread: dict[str, list[int]] = {}
    for i, s in enumerate(taken):
        by_thread.setdefault(s.thread, []).append(i)
    for idx in by_thread.values():
        for i, d in zip(idx, sorted(out[i] for i in idx), strict=True):
            out[i] = d
    return out


def _placed(s: FillerSession, date: datetime) -> list[Message]:
    return [
        replace(m, id=f"filler:{s.key[:16]}:{n}", timestamp=date, session=None)
        for n, m in enumerate(s.messages)
    ]


def build_history(
    messages: Sequence[Message],
    pool: FillerPool,
    budget: int,
    *,
    seed: int = 0,
    tokens: TokenCounter | None = None,
    tokens_per_day: int = DEFAULT_TOKENS_PER_DAY,
) -> History:
    """The evaluated conversation ``messages`` inside filler up to ``budget`` tokens.

    See the module docstring for the rules. A budget smaller than the conversation gives
    the conversation alone.

    Raises:
        InputError: A non-positive budget or ``tokens_per_day``.
    """
    if budget <= 0 or tokens_per_day <= 0:
        raise InputError("the history budget and tokens per day must be positive")
    counter = tokens or TokenCounter()
    own_tokens = sum(counter.count(m.text) for m in messages)
    own_hashes = {content_hash(m.text) for m in messages}
    taken, excluded = _choose(pool, own_hashes, budget - own_tokens, seed)
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    end = max(stamps) if stamps else _UNDATED_END
    dates = _filler_dates(taken, end, tokens_per_day, seed)
    # (date, 0 for the conversation's sessions so they come first on a tie, order, messages)
    sessions: list[tuple[datetime, int, int, list[Message]]] = [
        (min((m.timestamp or end) for m in group), 0, i, group)
        for i, group in enumerate(_sessions_of(messages))
    ]
    sessions += [
        (d, 1, i, _placed(s, d)) for i, (s, d) in enumerate(zip(taken, dates, strict=True))
    ]
    sessions.sort(key=lambda t: (t[0], t[1], t[2]))
    out = [
        replace(m, session=number)
        for number, (_, _, _, group) in enumerate(sessions, start=1)
        for m in group
    ]
    by_source: dict[str, int] = {}
    for s in taken:
        by_source[s.source] = by_source.get(s.source, 0) + s.tokens
    return History(
        messages=out,
        budget=budget,
        own_tokens=own_tokens,
        filler_tokens=sum(s.tokens for s in taken),
        filler_sessions=len(taken),
        filler_by_source=by_source,
        excluded_sessions=excluded,
        first_date=sessions[0][0] if sessions else None,
        seed=seed,
    )


def filler_texts(session: FillerSession, record_chars: int) -> list[str]:
    """The texts a build embeds for ``session``: its records as a store with
    ``record_chars`` writes them (turns packed within the session) and its turns as the
    turn baselines index them (one per piece, without the date header)."""
    from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, chunk_messages

    messages = list(session.messages)
    texts: list[str] = []
    for pack, size in ((True, record_chars), (False, DEFAULT_MAX_CHARS)):
        records = chunk_messages(
            messages, namespace=("filler",), origin="filler", max_chars=size, pack=pack
        )
        texts += [r.text for r in records]
    return list(dict.fromkeys(texts))


def embed_filler(
    pool: FillerPool,
    embeddings: Any,
    *,
    record_chars: int,
    seed: int = 0,
    batch: int = 256,
    progress: Any = None,
) -> int:
    """Embed every text a build of ``pool``'s sessions would embed (to fill an embedding
    cache once: with :class:`~mnemon_langgraph.search.embeddings.CachedEmbeddings`, texts
    already cached cost nothing, so a stopped fill resumes where it stopped).

    Sessions go in the order the histories of ``seed`` take them, so a fill stopped part
    way serves the smaller histories whole.

    Args:
        pool: The filler pool.
        embeddings: The (cached) embedder.
        record_chars: The store's record size.
        seed: The histories' seed.
        batch: Texts per embedding call.
        progress: Called as ``progress(sessions_done, sessions_total, texts_done)``.

    Returns:
        The number of texts embedded or found in the cache.
    """
    sessions = [s for thread in _shuffled_threads(pool, seed) for s in thread]
    pending: list[str] = []
    done = 0
    for i, s in enumerate(sessions, start=1):
        pending += filler_texts(s, record_chars)
        if len(pending) >= batch or i == len(sessions):
            embeddings.embed_documents(pending)
            done += len(pending)
            pending = []
            if progress is not None:
                progress(i, len(sessions), done)
    return done
