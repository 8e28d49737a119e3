"""Move a memory between stores: one namespace as JSONL, out of any store and into any store.

:func:`export_jsonl` writes a namespace (its messages as the records hold them, and its
consolidated index items) as JSON Lines; :func:`import_jsonl` reads such a file into a store
of either backend. The format is described in ``docs/transfer.md``; in short:

* line 1 is a header ``{"format": "mnemon-memory", "version": 1, "namespace": [...], …}``
  with the counts of the lines that follow, so a truncated file is refused;
* then one line per stored message (``"type": "message"``) in write order, carrying its id,
  role, speaker, text, and the id, session, date, position and source of the record that
  holds it. A message longer than a record is stored in pieces: one line per piece, same
  id, ``part`` 0, 1, …;
* then one line per consolidated index item (``"type": "item"``) with its record links;
* then one line per key-value item a :class:`~mnemon_langgraph.integrations.MnemonBaseStore`
  keeps in the namespace (``"type": "kv"``: key, value, searchable fields, times).

Everything goes through the public store API (``records``, ``ingest``,
``known_message_ids``, ``get_records``) and the store's item store, ``store.item_store()``
(``all_items``, ``get_items``, ``commit_batch`` of
:class:`~mnemon_langgraph.items.ItemStore`). ``ingest`` chunks messages into records itself,
so the importer writes each run of records with the messages that made them, after checking
(offline, with the package's own chunker) that the target store will cut them into exactly
the records of the file: same record ids, texts, sessions, dates and sources. What
``ingest`` decides alone is the ``position`` of a record in its session (one past the
session's last record): a file whose positions have gaps (records deleted in the source)
is imported in the same order with consecutive positions, and the result says how many
moved.

The whole file is parsed and checked before anything is written; a malformed line is an
:class:`~mnemon_langgraph.errors.InputError` naming its line number. Importing the same
file again writes nothing (message ids already stored are skipped, items are keyed by id).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.items import IndexItem, item_dict
from mnemon_langgraph.records._chunking import chunk_messages, split_text
from mnemon_langgraph.store._internal.contract import check_namespace_size
from mnemon_langgraph.store._internal.item_rows import group_key_text
from mnemon_langgraph.types import (
    MAX_MESSAGE_ID_CHARS,
    ROLES,
    Message,
    Namespace,
    Record,
    as_naive_utc,
    check_session,
    normalize_namespace,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "ExportSummary",
    "ImportResult",
    "check_import",
    "export_document",
    "export_jsonl",
    "export_lines",
    "import_jsonl",
    "read_export",
]

FORMAT = "mnemon-memory"
"""The ``format`` value of an export's header line."""

VERSION = 1
"""The version of the format this module writes; :func:`read_export` reads this one only."""

_MIN_PIECE = 40  # chunking's floor for a piece budget (records.chunking._MIN_PIECE)
MAX_GROUP_KEY_BYTES = 2048
"""Longest timeline / value-history key of an imported item (its topic, or its subject and
attribute, in UTF-8): PostgreSQL indexes it in a B-tree (entries of at most ~2,700 bytes)."""
_ITEM_KINDS = ("event", "value", "instruction")
_MESSAGE_KEYS = (
    "type", "namespace", "id", "part", "role", "speaker", "text",
    "record", "session", "date", "position", "source",
)  # fmt: skip
_ITEM_KEYS = (
    "type", "namespace", "id", "kind", "text", "record_ids", "topic", "subject",
    "attribute", "value", "date", "contradicts",
)  # fmt: skip
_KV_KEYS = ("type", "namespace", "key", "value", "index", "created_at", "updated_at")
_KV_TTL_KEYS = ("ttl", "expires_at")  # only on an item put with a TTL


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What :func:`export_jsonl` wrote: the namespace and how many records, lines, items."""

    namespace: Namespace
    records: int
    messages: int
    lines: int
    items: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What :func:`import_jsonl` wrote.

    Attributes:
        namespace: The namespace imported into (the file's).
        records_written: Records the store wrote.
        messages_written: Messages in those records.
        messages_skipped: Messages the store already held (same id), left alone.
        items_written: Consolidated index items written (items already there are skipped).
        positions_renumbered: Records whose position in their session differs from the
            file's (the file had gaps, or the session already held records).
        record_ids: Ids of the records written, in order.
        kv_items_written: Key-value items (a ``MnemonBaseStore``'s) written or replaced.
    """

    namespace: Namespace
    records_written: int
    messages_written: int
    messages_skipped: int
    items_written: int
    positions_renumbered: int
    record_ids: tuple[str, ...] = field(default=())
    kv_items_written: int = 0


# ---------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------


def export_lines(store: Any, namespace: str | Sequence[str]) -> list[str]:
    """The export of ``namespace`` as JSON texts, one per line (header first).

    The output depends only on what the store holds, not on its backend: the same memory
    exported from SQLite and from PostgreSQL gives the same bytes. Journal ``seq`` numbers
    and vectors are not exported (the importing store assigns and computes its own).

    Raises:
        NamespaceError: The namespace is unusable.
    """
    ns = normalize_namespace(namespace)
    records = list(store.records(ns))
    items, watermark = _items_of(store, ns)
    consolidated = None
    for record in records:
        if record.seq <= watermark:
            consolidated = record.id
    parts: dict[str, int] = {}  # a long message's pieces are numbered across its records
    body = [_dumps(line) for r in records for line in _message_lines(r, parts)]
    body += [_dumps(_item_line(item)) for item in items]
    kv = _kv_rows(store, ns)
    body += [_dumps({"type": "kv", **row}) for row in kv]
    header = {
        "format": FORMAT,
        "version": VERSION,
        "namespace": list(ns),
        "record_chars": int(store.record_chars),
        "records": len(records),
        "messages": len({mid for r in records for mid in r.message_ids}),
        "lines": len(body) - len(items) - len(kv),
        "items": len(items),
        "kv_items": len(kv),
        "consolidated_through": consolidated,
    }
    return [_dumps(header), *body]


def export_jsonl(store: Any, namespace: str | Sequence[str], fp: IO[str]) -> ExportSummary:
    """Write the export of ``namespace`` to the text stream ``fp`` (see :func:`export_lines`).

    Returns:
        What was written.
    """
    lines = export_lines(store, namespace)
    for line in lines:
        fp.write(line + "\n")
    header = json.loads(lines[0])
    return ExportSummary(
        namespace=tuple(header["namespace"]),
        records=header["records"],
        messages=header["messages"],
        lines=header["lines"],
        items=header["items"],
    )


def export_document(store: Any, namespace: str | Sequence[str]) -> dict[str, Any]:
    """Everything stored about ``namespace``, as one JSON-ready document (for a data-access
    request; :func:`export_jsonl` is the form to move a memory with).

    ``store.export``'s document (the records with their dates, sessions, speakers, message
    ids and journal ``seq``, and the audit trail) plus what consolidation wrote about the
    user: ``items`` (each with the ids of the records it came from) and
    ``consolidated_through`` (the last record folded, or ``None``).
    """
    ns = normalize_namespace(namespace)
    document: dict[str, Any] = json.loads(store.export(ns))
    items, watermark = _items_of(store, ns)
    folded = [r["id"] for r in document["records"] if r["seq"] <= watermark]
    document["items"] = [
        {k: v for k, v in _item_line(item).items() if k not in ("type", "namespace")}
        for item in items
    ]
    document["consolidated_through"] = folded[-1] if folded else None
    return document


def _dumps(data: dict[str, Any]) -> str:
    # One spelling for every backend: keys in the order written, no ASCII escaping.
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _date_text(value: datetime | None) -> str | None:
    date = as_naive_utc(value)
    return None if date is None else date.isoformat()


def _items_of(store: Any, ns: Namespace) -> tuple[list[IndexItem], int]:
    """The namespace's index items (write order) and its consolidation watermark."""
    items = _item_store(store)
    try:
        return list(items.all_items(ns)), int(items.watermark(ns))
    finally:
        items.close()


def _kv_rows(store: Any, ns: Namespace) -> list[dict[str, Any]]:
    """The namespace's key-value items (``MnemonBaseStore.export_items``), by key."""
    from mnemon_langgraph.integrations.basestore import MnemonBaseStore

    if any("." in label for label in ns):
        return []  # a BaseStore cannot name such a namespace, so it holds no items there
    with MnemonBaseStore(store) as base:
        return base.export_items(ns)


def _item_store(store: Any) -> Any:
    return store.item_store()


def _message_lines(record: Record, parts: dict[str, int]) -> Iterator[dict[str, Any]]:
    """One line per speaker line of ``record`` (a message, or one piece of a long one)."""
    lines = record.text.split("\n")
    if len(lines) != len(record.message_ids):
        raise InputError(
            f"record {record.id} has {len(lines)} lines for {len(record.message_ids)} "
            "message ids; it cannot be exported as messages"
        )
    roles = record.roles if len(record.roles) == len(lines) else ("user",) * len(lines)
    for text, mid, role in zip(lines, record.message_ids, roles, strict=True):
        speaker, piece = _split_line(text, record.speakers)
        parts.setdefault(mid, 0)
        yield {
            "type": "message",
            "namespace": list(record.namespace),
            "id": mid,
            "part": parts[mid],
            "role": role,
            "speaker": speaker,
            "text": piece,
            "record": record.id,
            "session": record.session,
            "date": _date_text(record.date),
            "position": record.position,
            "source": record.origin,
        }
        parts[mid] += 1


def _split_line(line: str, speakers: Sequence[str]) -> tuple[str, str]:
    """``"speaker: text"`` → ``(speaker, text)``, the speaker being one of ``speakers``.

    The longest matching speaker wins (a name may itself hold ``": "``).
    """
    for speaker in sorted(speakers, key=len, reverse=True):
        if line.startswith(speaker + ": "):
            return speaker, line[len(speaker) + 2 :]
    speaker, _, text = line.partition(": ")
    return speaker, text


def _item_line(item: IndexItem) -> dict[str, Any]:
    return {"type": "item", **item_dict(item)}


# ---------------------------------------------------------------------------------------
# reading and checking a file (nothing is written here)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Piece:
    """One message line of the file: a message, or one piece of a long message."""

    lineno: int
    id: str
    part: int
    role: str
    speaker: str
    text: str
    record: str
    session: int
    date: datetime | None
    position: int
    source: str


@dataclass(slots=True)
class _FileRecord:
    """The lines of one record, as the file gives them."""

    id: str
    lineno: int
    session: int
    date: datetime | None
    position: int
    source: str
    pieces: list[_Piece] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ParsedExport:
    """A checked export file: what :func:`import_jsonl` will write."""

    namespace: Namespace
    record_chars: int
    records: tuple[_FileRecord, ...]
    items: tuple[IndexItem, ...]
    consolidated_through: str | None
    kv_items: tuple[dict[str, Any], ...] = ()
    item_lines: tuple[int, ...] = ()


def read_export(fp: Iterable[str], *, name: str = "<input>") -> ParsedExport:
    """Parse and check a whole export file; nothing is written.

    Args:
        fp: The file's lines (an open text file, or a list of strings).
        name: How errors name the file.

    Raises:
        InputError: A line is malformed (the message names the file and the line number),
            the file is empty or truncated, or its lines contradict each other.
    """
    header: dict[str, Any] | None = None
    pieces: list[_Piece] = []
    items: list[tuple[int, IndexItem]] = []
    kv: list[dict[str, Any]] = []
    ns: Namespace = ()
    for lineno, raw in enumerate(fp, start=1):
        data = _parse_json(raw, name, lineno)
        if header is None:
            header = _check_header(data, name, lineno)
            ns = tuple(header["namespace"])
            continue
        where = f"{name}:{lineno}"
        try:
            kind = data.get("type")
            if kind == "message":
                pieces.append(_parse_piece(data, ns, lineno))
            elif kind == "item":
                if kv:
                    raise InputError("an item line after the kv lines")
                items.append((lineno, _parse_item(data, ns)))
            elif kind == "kv":
                kv.append(_parse_kv(data, ns))
            else:
                raise InputError(f"unknown line type {kind!r} (expected 'message', 'item' or 'kv')")
            if kind == "message" and (items or kv):
                raise InputError("a message line after the item lines")
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    if header is None:
        raise InputError(f"{name}: empty file (no header line)")
    records = _records_of_pieces(pieces, name)
    _check_counts(header, records, pieces, items, name)
    if header.get("kv_items", 0) != len(kv):
        raise InputError(
            f"{name}: truncated or edited file: kv_items {header.get('kv_items', 0)} in the "
            f"header, {len(kv)} in the file"
        )
    _check_items(items, records, header.get("consolidated_through"), name)
    return ParsedExport(
        namespace=ns,
        record_chars=header["record_chars"],
        records=tuple(records),
        items=tuple(item for _, item in items),
        consolidated_through=header.get("consolidated_through"),
        kv_items=tuple(kv),
        item_lines=tuple(lineno for lineno, _ in items),
    )


def _parse_kv(data: dict[str, Any], ns: Namespace) -> dict[str, Any]:
    """A key-value item line, checked as the BaseStore's import checks it (no I/O)."""
    from mnemon_langgraph.integrations.basestore import check_exported_items

    _check_keys({k: v for k, v in data.items() if k not in _KV_TTL_KEYS}, _KV_KEYS)
    _check_namespace(data, ns)
    row = {k: v for k, v in data.items() if k != "type"}
    try:
        check_exported_items([row])
    except InputError as exc:
        raise InputError(str(exc).removeprefix("item 0: ")) from None
    return row


def _parse_json(raw: str, name: str, lineno: int) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError of a bytes line
        raise InputError(f"{name}:{lineno}: not a JSON line ({exc})") from None
    except RecursionError:  # arrays or objects nested past Python's recursion limit
        from mnemon_langgraph.integrations.basestore_rank import MAX_VALUE_DEPTH

        raise InputError(
            f"{name}:{lineno}: JSON nested too deeply (at most {MAX_VALUE_DEPTH} levels)"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{name}:{lineno}: a line must be a JSON object, got {data!r:.60}")
    return data


def _check_header(data: dict[str, Any], name: str, lineno: int) -> dict[str, Any]:
    where = f"{name}:{lineno}"
    if data.get("format") != FORMAT:
        raise InputError(
            f"{where}: not a mnemon export (the first line must be the header "
            f'{{"format": "{FORMAT}", …}}, got format {data.get("format")!r})'
        )
    if data.get("version") != VERSION:
        raise InputError(
            f"{where}: export format version {data.get('version')!r}; this version of "
            f"mnemon-langgraph reads version {VERSION}"
        )
    try:
        namespace = normalize_namespace(_list(data.get("namespace"), "namespace"))
        data["namespace"] = list(check_namespace_size(namespace))
        for key in ("record_chars", "records", "messages", "lines", "items"):
            _int(data.get(key), key)
        if "kv_items" in data:  # absent in files written before key-value items were
            _int(data.get("kv_items"), "kv_items")
        _optional_str(data.get("consolidated_through"), "consolidated_through")
    except InputError as exc:
        raise InputError(f"{where}: header: {exc}") from None
    return data


def _parse_piece(data: dict[str, Any], ns: Namespace, lineno: int) -> _Piece:
    _check_keys(data, _MESSAGE_KEYS)
    _check_namespace(data, ns)
    role = data.get("role")
    if role not in ROLES:
        raise InputError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    text = _str(data.get("text"), "text")
    if not text.strip() or text != " ".join(text.split()):
        raise InputError("text must be non-empty, with single spaces (as records hold it)")
    return _Piece(
        lineno=lineno,
        id=_str(data.get("id"), "id"),
        part=_int(data.get("part"), "part"),
        role=role,
        speaker=_str(data.get("speaker"), "speaker"),
        text=text,
        record=_str(data.get("record"), "record"),
        session=check_session(data.get("session")),
        date=_date(data.get("date"), "date"),
        position=_int(data.get("position"), "position"),
        source=_str(data.get("source"), "source", empty=True),
    )


def _parse_item(data: dict[str, Any], ns: Namespace) -> IndexItem:
    _check_keys(data, _ITEM_KEYS)
    _check_namespace(data, ns)
    kind = data.get("kind")
    if kind not in _ITEM_KINDS:
        raise InputError(f"item kind must be one of {list(_ITEM_KINDS)}, got {kind!r}")
    links = [_str(r, "record_ids[]") for r in _list(data.get("record_ids"), "record_ids")]
    if not links:
        raise InputError("an item must link to at least one record")
    contradicts = data.get("contradicts")
    if not isinstance(contradicts, bool):
        raise InputError(f"contradicts must be true or false, got {contradicts!r}")
    item = IndexItem(
        id=_bounded_id(data.get("id")),
        namespace=ns,
        kind=kind,
        text=_str(data.get("text"), "text"),
        record_ids=tuple(links),
        topic=_optional_str(data.get("topic"), "topic"),
        subject=_optional_str(data.get("subject"), "subject"),
        attribute=_optional_str(data.get("attribute"), "attribute"),
        value=_optional_str(data.get("value"), "value"),
        date=_date(data.get("date"), "date"),
        contradicts=contradicts,
    )
    size = len(group_key_text(item).encode("utf-8"))
    if size > MAX_GROUP_KEY_BYTES:
        raise InputError(
            f"the item's topic, or subject and attribute, take {size:,} bytes, more than "
            f"{MAX_GROUP_KEY_BYTES:,} (they name its timeline or value history)"
        )
    return item


def _bounded_id(value: object) -> str:
    """An item id: a non-empty string of at most :data:`MAX_MESSAGE_ID_CHARS` characters
    (ids are indexed on both backends, as message ids are)."""
    item_id = _str(value, "id")
    if len(item_id) > MAX_MESSAGE_ID_CHARS:
        raise InputError(
            f"item id has {len(item_id):,} characters, more than {MAX_MESSAGE_ID_CHARS}"
        )
    return item_id


def _check_keys(data: dict[str, Any], keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in data]
    extra = sorted(set(data) - set(keys))
    if missing or extra:
        raise InputError(
            "fields do not match the format"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unknown: {', '.join(extra)}" if extra else "")
        )


def _check_namespace(data: dict[str, Any], ns: Namespace) -> None:
    if data.get("namespace") != list(ns):
        raise InputError(
            f"namespace {data.get('namespace')!r} is not the header's {list(ns)!r} "
            "(one namespace per file)"
        )


def _str(value: object, what: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise InputError(f"{what} must be a non-empty string, got {value!r:.60}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (a lone surrogate)") from None
    if "\x00" in value:
        raise InputError(f"{what} contains a NUL character")
    return value


def _optional_str(value: object, what: str) -> str | None:
    return None if value is None else _str(value, what, empty=True)


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{what} must be a whole number ≥ 0, got {value!r:.60}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"{what} must be a list, got {value!r:.60}")
    return value


def _date(value: object, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{what} must be an ISO 8601 string or null, got {value!r:.60}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"{what} is not an ISO 8601 date: {value!r:.60}") from None
    if parsed.tzinfo is not None:
        raise InputError(f"{what} must be a UTC date without an offset, got {value!r:.60}")
    return parsed


def _records_of_pieces(pieces: Sequence[_Piece], name: str) -> list[_FileRecord]:
    """Group consecutive lines into records; their record fields must agree."""
    records: list[_FileRecord] = []
    seen: dict[str, int] = {}
    for piece in pieces:
        current = records[-1] if records else None
        if current is None or current.id != piece.record:
            if piece.record in seen:
                raise InputError(
                    f"{name}:{piece.lineno}: record {piece.record} continues after other "
                    f"records (its lines start at line {seen[piece.record]}); a record's "
                    "lines must be consecutive"
                )
            seen[piece.record] = piece.lineno
            current = _FileRecord(
                piece.record, piece.lineno, piece.session, piece.date, piece.position, piece.source
            )
            records.append(current)
        fields = (piece.session, piece.date, piece.position, piece.source)
        if fields != (current.session, current.date, current.position, current.source):
            raise InputError(
                f"{name}:{piece.lineno}: session, date, position or source differ from the "
                f"first line of record {piece.record} (line {current.lineno})"
            )
        current.pieces.append(piece)
    _check_parts(pieces, name)
    return records


def _check_parts(pieces: Sequence[_Piece], name: str) -> None:
    """A message's lines are consecutive, numbered 0, 1, …, with one role and speaker."""
    last: dict[str, _Piece] = {}
    previous: _Piece | None = None
    for piece in pieces:
        before = last.get(piece.id)
        if before is None:
            ok, why = piece.part == 0, "its first line must have part 0"
        else:
            ok = previous is before and piece.part == before.part + 1
            ok = ok and (piece.role, piece.speaker) == (before.role, before.speaker)
            why = (
                f"message {piece.id} already appeared at line {before.lineno}; a long "
                "message's pieces follow each other with parts 0, 1, … and one role and speaker"
            )
        if not ok:
            raise InputError(f"{name}:{piece.lineno}: {why}")
        last[piece.id] = previous = piece


def _check_counts(
    header: dict[str, Any],
    records: Sequence[_FileRecord],
    pieces: Sequence[_Piece],
    items: Sequence[object],
    name: str,
) -> None:
    found = {
        "records": len(records),
        "messages": len({p.id for p in pieces}),
        "lines": len(pieces),
        "items": len(items),
    }
    wrong = [f"{k} {header[k]} in the header, {v} in the file" for k, v in found.items()]
    wrong = [w for (k, v), w in zip(found.items(), wrong, strict=True) if header[k] != v]
    if wrong:
        raise InputError(f"{name}: truncated or edited file: {'; '.join(wrong)}")


def _check_items(
    items: Sequence[tuple[int, IndexItem]],
    records: Sequence[_FileRecord],
    consolidated: str | None,
    name: str,
) -> None:
    ids = {r.id for r in records}
    if consolidated is not None and consolidated not in ids:
        raise InputError(f"{name}: header: consolidated_through {consolidated} is no record")
    seen: set[str] = set()
    for lineno, item in items:
        unknown = [rid for rid in item.record_ids if rid not in ids]
        if item.id in seen or unknown:
            what = f"links to records not in the file: {unknown}" if unknown else "appears twice"
            raise InputError(f"{name}:{lineno}: item {item.id} {what}")
        seen.add(item.id)


# ---------------------------------------------------------------------------------------
# planning: which ingest calls rebuild the file's records (checked offline)
# ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Batch:
    """One ``ingest`` call: messages of one source that chunk into ``records``."""

    source: str
    records: list[_FileRecord]
    messages: list[Message]


def _units(records: Sequence[_FileRecord]) -> list[list[_FileRecord]]:
    """Runs of records that must be ingested together: a long message's pieces span them."""
    units: list[list[_FileRecord]] = []
    for record in records:
        if units and record.pieces[0].part > 0:
            units[-1].append(record)  # continues the previous record's last message
        else:
            units.append([record])
    return units


def _messages(records: Sequence[_FileRecord], record_chars: int, name: str) -> list[Message]:
    # ``record_chars``: the one the file was written with (its pieces were cut for it).
    """The messages whose chunking gives ``records``: a long message's pieces rejoined."""
    grouped: dict[str, list[_Piece]] = {}
    dates: dict[str, datetime | None] = {}
    for record in records:
        for piece in record.pieces:
            grouped.setdefault(piece.id, []).append(piece)
            dates.setdefault(piece.id, record.date)
    out: list[Message] = []
    for mid, pieces in grouped.items():
        first = pieces[0]
        budget = max(record_chars - len(first.speaker) - 2, _MIN_PIECE)
        try:
            out.append(
                Message(
                    text=_rejoin([p.text for p in pieces], budget),
                    speaker=first.speaker,
                    role=first.role,  # type: ignore[arg-type]  # checked against ROLES
                    id=mid,
                    timestamp=dates[mid],
                    session=first.session,
                )
            )
        except InputError as exc:
            raise InputError(f"{name}:{first.lineno}: {exc}") from None
    return out


def _rejoin(pieces: Sequence[str], budget: int) -> str:
    """The message text whose split gives ``pieces``.

    The chunker drops one space at a cut between words and nothing at a hard cut inside
    a word longer than the budget; each cut is decided by the text before it, so the
    joiner of each boundary is the one that makes the split cut there. (When both do, the
    stored pieces are the same either way.)
    """
    text = pieces[0]
    for before, after in itertools.pairwise(pieces):
        spaced = before + " " + after
        text += (" " if split_text(spaced, budget)[0] == before else "") + after
    return text


def _rebuilds(batch: _Batch, ns: Namespace, record_chars: int) -> str | None:
    """``None`` when chunking ``batch.messages`` gives exactly its records, else why not."""
    try:
        made = chunk_messages(
            batch.messages, namespace=ns, origin=batch.source, max_chars=record_chars
        )
    except InputError as exc:
        return str(exc)
    if len(made) != len(batch.records):
        return f"they chunk into {len(made)} records, not {len(batch.records)}"
    for record, want in zip(made, batch.records, strict=True):
        lines = "\n".join(f"{p.speaker}: {p.text}" for p in want.pieces)
        mids = tuple(p.id for p in want.pieces)
        roles = tuple(p.role for p in want.pieces)
        got = (record.id, record.text, record.message_ids, record.roles, record.session)
        if got != (want.id, lines, mids, roles, want.session) or record.date != want.date:
            return f"record {want.id} (line {want.lineno}) would be stored differently"
    return None


def _plan(parsed: ParsedExport, record_chars: int, name: str, limit: int = 256) -> list[_Batch]:
    # ``record_chars``: the importing store's (its ingest chunks with it).
    """The ingest calls that rebuild the file's records, each checked by chunking it.

    Consecutive runs share a call when chunking them together still gives their records
    (fewer, larger embedding batches); otherwise each run is a call of its own.

    Raises:
        InputError: A run cannot be rebuilt (the file was edited, or written by a store
            that chunks differently).
    """
    batches: list[_Batch] = []
    previous: list[_FileRecord] = []
    for unit in _units(parsed.records):
        one = _Batch(unit[0].source, unit, _messages(unit, parsed.record_chars, name))
        why = _rebuilds(one, parsed.namespace, record_chars)
        if why is not None:
            raise InputError(
                f"{name}:{unit[0].lineno}: the messages of record {unit[0].id} cannot be "
                f"stored as the file says: {why}"
            )
        last = batches[-1] if batches else None
        if last is not None and last.source == one.source and len(last.records) < limit:
            pair = _Batch(one.source, [*previous, *unit], [])
            pair.messages = _messages(pair.records, parsed.record_chars, name)
            if _rebuilds(pair, parsed.namespace, record_chars) is None:
                last.records.extend(unit)
                last.messages.extend(one.messages)
                previous = unit
                continue
        batches.append(one)
        previous = unit
    return batches


# ---------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------


def check_import(parsed: ParsedExport, record_chars: int, *, name: str = "<input>") -> None:
    """Check offline that a store cutting records at ``record_chars`` would store the
    file's records exactly as the file says (what :func:`import_jsonl` checks first).

    ``mnemon import`` calls it before it opens (and so creates) the target journal, so a
    refused file leaves no empty journal behind.

    Raises:
        InputError: A record cannot be rebuilt as the file says.
        ConfigurationError: ``record_chars`` is not the file's and would cut differently.
    """
    _checked_plan(parsed, int(record_chars), name)


def _checked_plan(parsed: ParsedExport, chars: int, name: str) -> list[_Batch]:
    try:
        return _plan(parsed, chars, name)
    except InputError as exc:
        if chars != parsed.record_chars:
            raise ConfigurationError(
                f"{name} was written by a store with record_chars={parsed.record_chars} and "
                f"this one has record_chars={chars}, so it would cut records differently "
                f"({exc}); open it with record_chars={parsed.record_chars}"
            ) from None
        raise


def import_jsonl(
    store: Any, fp: Iterable[str] | ParsedExport, *, name: str = "<input>"
) -> ImportResult:
    """Read an export (see :func:`export_lines`) into ``store``, in the file's namespace.

    Everything is checked before the first write: every line, the records rebuilt offline
    with the store's chunking, the key-value items as ``put`` checks them, and, against
    the store, that no index item id of the file belongs to another namespace; the new
    items are embedded before the records are written. If any check fails, nothing is
    written. Messages the store already holds (same id) are skipped and items are keyed by
    id, so importing a file again writes nothing.

    Args:
        store: A :class:`~mnemon_langgraph.store.MnemonStore` of either backend.
        fp: The file's lines (an open text file, or a list of strings), or what
            :func:`read_export` made of them.
        name: How errors name the file.

    Raises:
        InputError: A malformed line (named with its line number), a file this store
            cannot rebuild, or an item id another namespace holds; nothing was written.
        ConfigurationError: The store's ``record_chars`` is not the file's and it would
            cut the records differently; nothing was written.
        ModelCallError: The embedder failed; nothing was written.

    The writes are one transaction of the store (:meth:`MnemonStore.transaction
    <mnemon_langgraph.store.MnemonStore.transaction>`): records, index items with the
    watermark, and key-value items commit together, so any failure, or the process killed
    on the way, leaves the store exactly as it was.
    """
    parsed = fp if isinstance(fp, ParsedExport) else read_export(fp, name=name)
    batches = _checked_plan(parsed, int(store.record_chars), name)
    ns = parsed.namespace
    items = _item_store(store)
    try:
        new_items = _new_items(items, parsed, name)
        vectors = items.embed_items(new_items) if new_items else None
        written: list[str] = []
        messages_written = skipped = 0
        # One transaction: the records, the index items with the watermark and the
        # key-value items commit together, so a failure or a kill leaves the store as it was.
        with store.transaction():
            for batch in batches:
                result = store.ingest(ns, batch.messages, origin=batch.source)
                written.extend(result.record_ids)
                messages_written += result.messages_written
                skipped += result.messages_skipped
            items_written = _commit_items(store, items, parsed, new_items, vectors)
            kv_written = _import_kv(store, parsed.kv_items) if parsed.kv_items else 0
    finally:
        items.close()
    return ImportResult(
        namespace=ns,
        records_written=len(written),
        messages_written=messages_written,
        messages_skipped=skipped,
        items_written=items_written,
        positions_renumbered=_renumbered(store, parsed, written),
        record_ids=tuple(written),
        kv_items_written=kv_written,
    )


def _import_kv(store: Any, rows: Sequence[dict[str, Any]]) -> int:
    """Write the file's key-value items (same namespace and key: replaced, so idempotent),
    on this thread: inside the import's transaction."""
    from mnemon_langgraph.integrations.basestore import MnemonBaseStore

    with MnemonBaseStore(store) as base:
        return base.import_items(rows)


def _renumbered(store: Any, parsed: ParsedExport, written: Sequence[str]) -> int:
    wanted = {r.id: r.position for r in parsed.records}
    stored = store.get_records(parsed.namespace, [rid for rid in written if rid in wanted])
    return sum(1 for r in stored if r.position != wanted[r.id])


def _new_items(items: Any, parsed: ParsedExport, name: str) -> list[IndexItem]:
    """The file's items the store lacks; an id held by another namespace is refused."""
    if not parsed.items:
        return []
    ns = parsed.namespace
    ids = [it.id for it in parsed.items]
    foreign = items.foreign_ids(ns, ids)
    if foreign:
        lines = dict(zip(ids, parsed.item_lines or (0,) * len(ids), strict=True))
        first = min(foreign, key=lambda item_id: lines[item_id])
        raise InputError(
            f"{name}:{lines[first]}: item {first} is an index item of another namespace in "
            f"this store ({len(foreign)} of the file's items are); item ids are unique in a "
            "store, so the file cannot be imported here"
        )
    held = {it.id for it in items.get_items(ns, ids)}
    return [it for it in parsed.items if it.id not in held]


def _commit_items(
    store: Any,
    items: Any,
    parsed: ParsedExport,
    new: Sequence[IndexItem],
    vectors: Any,
) -> int:
    """Write the new items; move the watermark to the file's last consolidated record."""
    ns = parsed.namespace
    current = int(items.watermark(ns))
    target = current
    if parsed.consolidated_through is not None:
        found = store.get_records(ns, [parsed.consolidated_through])
        target = max(current, found[0].seq) if found else current
    if not new and target == current:
        return 0
    added, _ = items.commit_batch(
        ns,
        expected_watermark=current,
        new_watermark=target,
        new_items=new,
        new_vectors=vectors,
    )
    return int(added)
