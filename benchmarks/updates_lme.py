"""Stale marks of the update detector on LongMemEval dev (reads the data, writes nothing).

Every turn of a question's haystack becomes a record (``Session i — date`` header, the
turn's role as speaker); each user turn is judged against all the question's user turns
(``staleness.stale_p``, no current message). Counted: user turns marked stale; gold turns
(``has_answer``) marked stale — for knowledge-update questions split into the latest gold
turn (nothing later replaced it: a mark is wrong) and earlier ones (replaced: a mark is
right); for the other question types every gold turn (nothing replaced it as far as the
benchmark says: a mark is wrong).

    python benchmarks/updates_lme.py /work/shared/data/longmemeval-dev/longmemeval_s_dev.json

A second argument names an update-weights file (``mnemon train updates --out FILE``): the
learned detector is measured instead of the default.
"""

import json
import sys
from collections import Counter

from mnemon_langgraph.judges._features import Doc
from mnemon_langgraph.judges._staleness import stale_p
from mnemon_langgraph.judges._update_model import UpdateWeights

weights = UpdateWeights.load(sys.argv[2]) if len(sys.argv) > 2 else "default"

counts: Counter[str] = Counter()
with open(sys.argv[1], encoding="utf-8") as f:
    questions = json.load(f)
for q in questions:
    ku = q["question_type"] == "knowledge-update"
    docs, gold = [], []
    for si, (sess, date) in enumerate(
        zip(q["haystack_sessions"], q["haystack_dates"], strict=True), 1
    ):
        day = date.split(" ")[0].replace("/", "-")
        for ti, turn in enumerate(sess):
            if turn["role"] != "user":
                continue
            text = f"user: {turn['content']}"
            doc = Doc(
                {"id": f"{si}.{ti}", "header": f"Session {si} — {day}", "text": text}, len(docs)
            )
            docs.append(doc)
            if turn.get("has_answer"):
                gold.append(doc)
    stale = {d.id: stale_p(d, docs, [], weights) >= 0.5 for d in docs}
    counts["ku user turns" if ku else "other user turns"] += len(docs)
    counts["ku user turns stale" if ku else "other user turns stale"] += sum(stale.values())
    for g in gold:
        latest = not any(o.later_than(g) for o in gold if o is not g)
        kind = ("ku latest gold" if latest else "ku replaced gold") if ku else "other gold"
        counts[kind] += 1
        counts[kind + " stale"] += stale[g.id]
print(json.dumps(dict(sorted(counts.items())), indent=1))
